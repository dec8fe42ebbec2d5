//! Running a credential program (a `docker-credential-<name>` helper or a kubelet
//! credential provider plugin) bounded in time and output, without blocking a runtime
//! thread (`tokio::process`).
//!
//! The program runs in its own process group. When the timeout runs out, an output
//! passes [`OUTPUT_LIMIT`], or the future is dropped (the caller's deadline passed),
//! the whole group is killed (the program and anything it started), then the program
//! is reaped. The output is returned to the caller only; nothing here logs it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

/// The most a credential program may write to stdout or stderr, in bytes (1 MiB): a
/// reply is a small JSON object.
pub const OUTPUT_LIMIT: u64 = 1 << 20;

/// How long the reaping of a killed program is waited for.
const REAP_WAIT: Duration = Duration::from_secs(1);

/// Why a program gave no output to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExecFailure {
    /// The program does not exist.
    Missing,
    /// It exists but could not be started; the OS's reason.
    Spawn(String),
    /// It did not finish within the timeout and was killed.
    TimedOut,
    /// It wrote more than [`OUTPUT_LIMIT`] bytes to stdout or stderr and was killed.
    OutputTooLarge,
}

/// Reads a pipe to its end, at most [`OUTPUT_LIMIT`] bytes; no pipe reads as nothing.
///
/// # Errors
/// The read error; `FileTooLarge` past the limit.
async fn read_all(pipe: Option<impl AsyncRead + Unpin>) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        pipe.take(OUTPUT_LIMIT + 1).read_to_end(&mut bytes).await?;
    }
    if bytes.len() as u64 > OUTPUT_LIMIT {
        return Err(std::io::ErrorKind::FileTooLarge.into());
    }
    Ok(bytes)
}

/// Kills the process group `group` (the program's pid: it was started with
/// `process_group(0)`): the program and everything it started and left in its group.
#[cfg(unix)]
fn kill_group(group: Option<u32>) {
    let Some(pgid) = group.and_then(|g| libc::pid_t::try_from(g).ok()) else {
        return;
    };
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) with a negative pid signals that process group; it takes no
    // pointers. ESRCH (the group is already gone) is fine.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_group: Option<u32>) {}

/// Kills a program's process group when dropped; forgotten once the program is done.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// Runs `program` with `args`, this process's environment plus `env` (later entries
/// win, as `exec.Cmd.Env` with appended values), and `stdin` written to its standard
/// input, within `timeout`.
///
/// # Errors
/// [`ExecFailure`]: missing program, cannot start, timeout, output over the limit.
pub(crate) async fn run_bounded(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    stdin: Vec<u8>,
    timeout: Duration,
) -> Result<std::process::Output, ExecFailure> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so that a timeout kills whatever the program started too
    // (a `sleep`, a keychain or cloud client), not the program alone.
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ExecFailure::Missing,
        _ => ExecFailure::Spawn(e.kind().to_string()),
    })?;
    let group = child.id();
    // Dropped before the program is done (the caller's deadline passed, say): the whole
    // group goes, not the program alone, which `kill_on_drop` would leave its children.
    let guard = GroupGuard(group);
    let input = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let exchange = async {
        let write = async move {
            if let Some(mut input) = input {
                // A program that exits without reading its input is not an error here;
                // its exit status says what happened.
                let _ = input.write_all(&stdin).await;
                let _ = input.shutdown().await;
            }
        };
        // The first failure (an output over the limit) ends the exchange at once; the
        // program is killed below rather than waited for.
        let (_, stdout, stderr, status) = tokio::try_join!(
            async {
                write.await;
                Ok(())
            },
            read_all(stdout),
            read_all(stderr),
            child.wait()
        )?;
        Ok::<_, std::io::Error>(std::process::Output {
            status,
            stdout,
            stderr,
        })
    };
    let result = tokio::time::timeout(timeout, exchange).await;
    let failure = match result {
        Ok(Ok(output)) => {
            std::mem::forget(guard);
            return Ok(output);
        }
        Err(_) => ExecFailure::TimedOut,
        Ok(Err(e)) => match e.kind() {
            std::io::ErrorKind::FileTooLarge => ExecFailure::OutputTooLarge,
            kind => ExecFailure::Spawn(kind.to_string()),
        },
    };
    kill_group(group);
    // Reap the program (the group's leader); `kill_on_drop` is the fallback.
    let _ = child.start_kill();
    let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
    Err(failure)
}
