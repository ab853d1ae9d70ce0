//! A zip archive of a few files, stored (not compressed: the Markdown and SVG
//! of a report are small, and any unzip reads method 0). PKWARE APPNOTE 4.3.7
//! local headers, central directory and end record; names are UTF-8 (flag 11).

/// The archive holding `files` (`(name, bytes)`), or why it cannot be made.
pub fn stored(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    let too_big = "an export over 4 GiB cannot be a plain zip";
    for (name, data) in files {
        let crc = crc32fast::hash(data);
        let size = u32::try_from(data.len()).map_err(|_| too_big)?;
        let offset = u32::try_from(out.len()).map_err(|_| too_big)?;
        let name_len = u16::try_from(name.len()).map_err(|_| "a file name in the zip is too long")?;
        // Local file header.
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&20u16.to_le_bytes()); // version needed
        out.extend_from_slice(&(1u16 << 11).to_le_bytes()); // UTF-8 names
        out.extend_from_slice(&0u16.to_le_bytes()); // stored
        out.extend_from_slice(&0u16.to_le_bytes()); // time
        out.extend_from_slice(&0x21u16.to_le_bytes()); // date: 1980-01-01
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&name_len.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // extra
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        // Its central directory entry.
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // made by
        central.extend_from_slice(&20u16.to_le_bytes()); // needed
        central.extend_from_slice(&(1u16 << 11).to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&0u16.to_le_bytes());
        central.extend_from_slice(&0x21u16.to_le_bytes());
        central.extend_from_slice(&crc.to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&name_len.to_le_bytes());
        central.extend_from_slice(&[0; 6]); // extra, comment, disk number start
        central.extend_from_slice(&[0; 6]); // internal, external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let count = u16::try_from(files.len()).map_err(|_| "too many files for a plain zip")?;
    let central_at = u32::try_from(out.len()).map_err(|_| too_big)?;
    let central_len = u32::try_from(central.len()).map_err(|_| too_big)?;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // this disk, disk with the directory
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&central_len.to_le_bytes());
    out.extend_from_slice(&central_at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // comment
    Ok(out)
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
