//! Child processes that cannot outlive the test process.
//!
//! Children are spawned from one long-lived thread with
//! `PR_SET_PDEATHSIG = SIGKILL`. Linux sends that signal when the thread that
//! forked the child ends, so spawning from a thread that lives as long as the
//! process means: the child is killed when the process dies, even when it is
//! killed or a registry sits in a `static` that is never dropped. Normal
//! cleanup is still [`Drop`] (kill, then wait).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};

use crate::Error;

struct SpawnRequest {
    program: PathBuf,
    args: Vec<String>,
    cwd: PathBuf,
    reply: mpsc::Sender<std::io::Result<Child>>,
}

fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("pullcheck-testkit-spawner".into())
            .spawn(move || {
                for req in rx {
                    let mut cmd = Command::new(&req.program);
                    cmd.args(&req.args)
                        .current_dir(&req.cwd)
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped());
                    // SAFETY: prctl and getppid are async-signal-safe; the
                    // closure allocates nothing.
                    unsafe {
                        cmd.pre_exec(|| {
                            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                                return Err(std::io::Error::last_os_error());
                            }
                            if libc::getppid() == 1 {
                                // The parent is already gone.
                                libc::_exit(1);
                            }
                            Ok(())
                        });
                    }
                    let _ = req.reply.send(cmd.spawn());
                }
            })
            .expect("spawning the pullcheck-testkit spawner thread");
        Mutex::new(tx)
    })
}

/// Lines a child printed, shared with the thread that reads them.
pub(crate) type Lines = Arc<Mutex<VecDeque<String>>>;

/// How many stderr lines are kept for error messages.
const STDERR_KEEP: usize = 200;

/// A running child whose stderr is kept (last lines) and whose stdout lines
/// are handed to a callback. Killed and reaped on drop.
pub(crate) struct Process {
    child: Child,
    stderr: Lines,
}

impl Process {
    /// Spawns `program args...` in `cwd`. `on_stdout` runs on a reader thread
    /// for every stdout line.
    pub(crate) fn spawn(
        program: PathBuf,
        args: Vec<String>,
        cwd: PathBuf,
        on_stdout: impl FnMut(String) + Send + 'static,
    ) -> Result<Self, Error> {
        let (reply, result) = mpsc::channel();
        let context = format!("spawning {}", program.display());
        {
            let tx = spawner().lock().unwrap_or_else(|e| e.into_inner());
            tx.send(SpawnRequest {
                program,
                args,
                cwd,
                reply,
            })
            .map_err(|_| Error::io(&context, std::io::Error::other("spawner thread is gone")))?;
        }
        let mut child = result
            .recv()
            .map_err(|_| Error::io(&context, std::io::Error::other("spawner thread is gone")))?
            .map_err(|e| Error::io(&context, e))?;
        let stderr: Lines = Arc::default();
        if let Some(out) = child.stderr.take() {
            let lines = stderr.clone();
            read_lines(out, move |line| {
                let mut lines = lines.lock().unwrap_or_else(|e| e.into_inner());
                if lines.len() == STDERR_KEEP {
                    lines.pop_front();
                }
                lines.push_back(line);
            });
        }
        if let Some(out) = child.stdout.take() {
            read_lines(out, on_stdout);
        }
        Ok(Process { child, stderr })
    }

    /// The last lines of stderr, joined.
    pub(crate) fn stderr(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `Some(status)` if the child has exited.
    pub(crate) fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown status ({e})")),
        }
    }

    /// The child's process id.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_lines(out: impl Read + Send + 'static, mut f: impl FnMut(String) + Send + 'static) {
    let spawned = std::thread::Builder::new()
        .name("pullcheck-testkit-output".into())
        .spawn(move || {
            let mut reader = BufReader::new(out);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf);
                        f(line.trim_end_matches(['\n', '\r']).to_string());
                    }
                }
            }
        });
    // Without a reader the pipe could fill up and block the child; failing to
    // start a thread is not recoverable here anyway.
    spawned.expect("spawning an output reader thread");
}

/// Runs a short helper command to completion and returns its stdout.
/// `shown` is the command line used in errors (it may hide secrets).
pub(crate) fn run_tool(
    program: &str,
    args: &[&str],
    cwd: &std::path::Path,
    shown: &str,
) -> Result<String, Error> {
    let command = shown.to_string();
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(format!("running `{command}`"), e))?;
    if !out.status.success() {
        return Err(Error::Tool {
            command,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `openssl req -x509` in `dir`: a new RSA 2048 key (`keyout`) and a self-signed
/// certificate (`out`) for `subject`, valid for 2 days.
pub(crate) fn openssl_self_signed(
    dir: &std::path::Path,
    subject: &str,
    keyout: &str,
    out: &str,
) -> Result<(), Error> {
    let args = [
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2", "-subj", subject,
        "-keyout", keyout, "-out", out,
    ];
    run_tool(
        "openssl",
        &args,
        dir,
        &format!("openssl {}", args.join(" ")),
    )
    .map(drop)
}
