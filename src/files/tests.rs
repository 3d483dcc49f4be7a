//! The reader, the root, the walk and the atomic writer on real files in temporary
//! directories (FIFOs made with `mkfifo`).

use std::path::{Path, PathBuf};

use super::*;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "venusc-files-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = TempDir::new("fifo");
    let fifo = dir.path("f.venus");
    mkfifo(&fifo);
    let started = std::time::Instant::now();
    let e = read(&fifo, Input::Venus).unwrap_err();
    assert_eq!(e.code, Code::E0701);
    assert!(
        e.message.ends_with("it is a FIFO, not a regular file"),
        "{e}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[cfg(target_os = "linux")]
#[test]
fn devices_and_links_to_them_are_refused_and_proc_files_are_read_with_the_cap() {
    let dir = TempDir::new("dev");
    let e = read(Path::new("/dev/zero"), Input::Venus).unwrap_err();
    assert_eq!(e.code, Code::E0701);
    assert!(e.message.contains("a character device"), "{e}");
    let link = dir.path("zero_link.venus");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    assert_eq!(read(&link, Input::Venus).unwrap_err().code, Code::E0701);
    // `/proc` files report size 0 but have content: read up to the cap, not by the metadata.
    let status = read(Path::new("/proc/self/status"), Input::Venus).unwrap();
    assert!(String::from_utf8_lossy(&status).contains("Name:"));
}

#[test]
fn a_file_over_the_cap_is_e0702_and_one_at_the_cap_is_read() {
    let dir = TempDir::new("cap");
    let big = dir.path("big.venus");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(Input::Venus.cap() + 1).unwrap();
    let e = read(&big, Input::Venus).unwrap_err();
    assert_eq!(e.code, Code::E0702);
    assert!(e.message.contains("larger than 16 MiB"), "{e}");
    f.set_len(Input::Venus.cap()).unwrap();
    assert_eq!(
        read(&big, Input::Venus).unwrap().len() as u64,
        Input::Venus.cap()
    );
}

#[test]
fn a_missing_file_and_a_directory_are_coded() {
    let dir = TempDir::new("missing");
    assert_eq!(
        read(&dir.path("no.venus"), Input::Venus).unwrap_err().code,
        Code::E0703
    );
    let e = read(&dir.0, Input::Venus).unwrap_err();
    assert_eq!(e.code, Code::E0701);
    assert!(e.message.ends_with("it is a directory"), "{e}");
}

#[cfg(unix)]
#[test]
fn a_use_outside_the_root_is_e0109_even_through_a_link_and_inside_it_is_read() {
    let dir = TempDir::new("root");
    std::fs::create_dir_all(dir.path("proj/lib")).unwrap();
    std::fs::write(dir.path("proj/lib/m.venus"), "# models\n").unwrap();
    std::fs::write(dir.path("secret.venus"), "secret\n").unwrap();
    std::os::unix::fs::symlink(dir.path("secret.venus"), dir.path("proj/link.venus")).unwrap();
    let root = Root::at(&dir.path("proj"), false).unwrap();
    let mut read = root.reader();
    assert_eq!(read(&dir.path("proj/lib/m.venus")).unwrap(), b"# models\n");
    for outside in [
        dir.path("proj/../secret.venus"),
        dir.path("proj/link.venus"),
        PathBuf::from("/etc/passwd"),
        dir.path("proj/../missing.venus"),
    ] {
        let e = read(&outside).unwrap_err();
        assert_eq!(e.code, Code::E0109, "{}", outside.display());
        assert!(e.help.unwrap().contains("--root "));
    }
    // The help names the deepest root that holds both.
    let e = read(&dir.path("proj/../secret.venus")).unwrap_err();
    let both = std::fs::canonicalize(&dir.0).unwrap();
    assert!(
        e.help
            .as_deref()
            .unwrap()
            .contains(&format!("--root {}`", relative_to_cwd(&both).display())),
        "{:?}",
        e.help
    );
    let open = Root::at(&dir.path("proj"), true).unwrap();
    assert_eq!(
        open.reader()(&dir.path("proj/link.venus")).unwrap(),
        b"secret\n"
    );
}

#[cfg(unix)]
#[test]
fn the_walk_visits_each_directory_once_through_symlink_loops() {
    let dir = TempDir::new("walk");
    std::fs::create_dir_all(dir.path("d/sub")).unwrap();
    std::fs::write(dir.path("d/a.venus"), "").unwrap();
    std::fs::write(dir.path("d/sub/b.venus"), "").unwrap();
    std::os::unix::fs::symlink(".", dir.path("d/self")).unwrap();
    std::os::unix::fs::symlink("..", dir.path("d/sub/up")).unwrap();
    let files = venus_files(&[dir.path("d"), dir.path("d/a.venus")]).unwrap();
    assert_eq!(files, [dir.path("d/a.venus"), dir.path("d/sub/b.venus")]);
}

#[cfg(unix)]
#[test]
fn an_atomic_write_replaces_the_file_and_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("write");
    let target = dir.path("t.venus");
    std::fs::write(&target, "old\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    write_atomic(&target, b"new\n").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"new\n");
    let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    // No temporary is left behind.
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1);
    // Dropped without commit: the old file stays whole.
    let mut f = AtomicFile::create(&target).unwrap();
    f.write_all(b"half").unwrap();
    drop(f);
    assert_eq!(std::fs::read(&target).unwrap(), b"new\n");
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 1);
}

#[test]
fn a_write_into_a_missing_directory_is_e0704_and_an_input_as_output_is_e0705() {
    let dir = TempDir::new("refuse");
    let e = write_atomic(&dir.path("no/such/dir/x.json"), b"{}").unwrap_err();
    assert_eq!(e.code, Code::E0704);
    let input = dir.path("in.venus");
    std::fs::write(&input, "x").unwrap();
    let e = refuse_input(&dir.path("./in.venus"), &[&input]).unwrap_err();
    assert_eq!(e.code, Code::E0705);
    assert!(e.help.contains("in.out.venus"), "{}", e.help);
    assert!(refuse_input(&dir.path("other.venus"), &[&input]).is_ok());
}
