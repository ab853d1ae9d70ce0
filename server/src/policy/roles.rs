//! The roles of an investigation's members, in the order of what they allow,
//! and the need each kind of operation has.

pub use domain::accounts::Role;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Need {
    Read,
    Edit,
    Run,
    Own,
}

impl Need {
    pub(super) fn role(self) -> Role {
        match self {
            Self::Read => Role::Viewer,
            Self::Edit => Role::Editor,
            Self::Run => Role::Runner,
            Self::Own => Role::Owner,
        }
    }

    pub(super) fn doing(self) -> &'static str {
        match self {
            Self::Read => "Reading",
            Self::Edit => "Changing",
            Self::Run => "Running on hosts from",
            Self::Own => "Sharing or deleting",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_by_what_they_allow() {
        assert!(Role::Owner > Role::Runner && Role::Runner > Role::Editor && Role::Editor > Role::Viewer);
        assert_eq!(Need::Run.role(), Role::Runner);
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>().ok(), Some(role));
        }
        assert!("admin".parse::<Role>().is_err());
    }
}
