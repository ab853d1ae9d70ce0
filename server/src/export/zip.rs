//! A zip archive of an export's files, stored (not compressed: the Markdown and
//! SVG are small, run files are often compressed already, and an export of up
//! to `ZIP_FILES_BUDGET` is made inside a request), written by the `zip` crate:
//! UTF-8 names, and Zip64 where sizes need it.

use std::io::Write;

/// The archive holding `files` (`(name, bytes)`), or why it cannot be made.
pub fn stored(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, zip::result::ZipError> {
    let mut archive = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(files.iter().any(|(_, data)| data.len() as u64 >= u64::from(u32::MAX)));
    for (name, data) in files {
        archive.start_file(name.as_str(), options)?;
        archive.write_all(data)?;
    }
    Ok(archive.finish()?.into_inner())
}

#[cfg(test)]
mod tests {
    #[test]
    fn python_reads_it_back() {
        let files =
            vec![("report.md".to_string(), b"# Hi\n".to_vec()), ("charts/a b.svg".to_string(), b"<svg/>".to_vec())];
        let zip = super::stored(&files).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.zip");
        std::fs::write(&path, zip).unwrap();
        let out = std::process::Command::new("python3")
            .args(["-c", "import sys,zipfile; z=zipfile.ZipFile(sys.argv[1]); assert z.testzip() is None; print([(i.filename, z.read(i).decode()) for i in z.infolist()])"])
            .arg(&path)
            .output()
            .expect("python3");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "[('report.md', '# Hi\\n'), ('charts/a b.svg', '<svg/>')]"
        );
    }
}
