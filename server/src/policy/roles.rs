//! The roles of an investigation's members, in the order of what they allow,
//! and the need each kind of operation has.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    Viewer,
    Editor,
    Runner,
    Owner,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Owner, Role::Runner, Role::Editor, Role::Viewer];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Viewer => "viewer",
            Self::Editor => "editor",
            Self::Runner => "runner",
            Self::Owner => "owner",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }

    pub fn abilities(self) -> domain::model::Abilities {
        domain::model::Abilities {
            comment: true,
            edit: self >= Role::Editor,
            run: self >= Role::Runner,
            own: self >= Role::Owner,
            named: false,
        }
    }
}

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
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("admin"), None);
    }
}
