//! What is wrong with one container, as data: each problem's position apart from its
//! words, so that every front end composes `file:line:column: message` itself (or leaves
//! a position out that means nothing to its reader, as the admission webhook does for
//! its own copy of the object), and the variables an image waits for by name and source.

use std::fmt;

use serde::Serialize;

/// A place in an input text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Position {
    /// The file, as given.
    pub file: String,
    /// 1-based line where the value is used (at the alias, for a value reached through
    /// one); `None` when unknown.
    pub line: Option<usize>,
    /// 1-based column, in characters; `None` when unknown.
    pub column: Option<usize>,
    /// Where the value itself is written, when that is elsewhere than where it is used
    /// (it was reached through an alias): `{"line": 4, "column": 17}`.
    pub written: Option<LineColumn>,
}

/// A 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct LineColumn {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl fmt::Display for Position {
    /// `file:line:column`, then ` (written at line:column)` when written elsewhere.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        if let Some(w) = self.written {
            write!(f, " (written at {}:{})", w.line, w.column)?;
        }
        Ok(())
    }
}

/// One problem of a container ([`crate::Disposition::Invalid`],
/// [`crate::Disposition::UnknownPolicy`]): where, and what, apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Problem {
    /// Where; `None` for an `--image` argument (the message names it) and for a
    /// container of a compiled build, whose positions are in a machine's encoding of
    /// the build that no Vela user wrote (the origin names the container, and so does
    /// the message where the origin alone would not make it clear).
    pub at: Option<Position>,
    /// What is wrong, without the position.
    pub message: String,
}

impl Problem {
    /// A problem at `at`.
    pub fn at(at: Position, message: impl Into<String>) -> Problem {
        Problem {
            at: Some(at),
            message: message.into(),
        }
    }

    /// Several problems in one line: each `position: message`, joined by `; `.
    pub fn join(problems: &[Problem]) -> String {
        problems
            .iter()
            .map(Problem::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl fmt::Display for Problem {
    /// `position: message`, or the message alone without a position.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{at}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Where the value of a variable an image depends on would come from: only when the
/// build runs, never before.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ValueSource {
    /// The variable is the (upper-cased) `target` of one of the container's secrets,
    /// which the worker injects at build time.
    Secret {
        /// The secret's `source` as written.
        secret: String,
    },
    /// A `VELA_*` variable, which the Vela server sets when it compiles the build.
    Server,
    /// A variable the Vela server sets when it compiles the build, over the value the
    /// pipeline gives it (go-vela/server `compiler/native/environment.go`: the server's
    /// variables are applied after the pipeline's, stage's and step's `environment:`).
    ServerOverPipeline,
    /// A `PARAMETER_*` variable whose value is not one pullcheck renders as Vela's
    /// `api.ToString` does (`what`: "a mapping", "a float", …).
    Unrendered {
        /// What the parameter's value is.
        what: String,
    },
    /// A `PARAMETER_*` variable that several of the step's `parameters:` keys, equal
    /// but for case (`Foo`, `foo`), set to different values: go-vela/server v0.28.8's
    /// `EnvironmentStep` and `EnvironmentSecrets` (`compiler/native/environment.go`
    /// lines 119–130, 214–225) range over the Go map and upper-case each key, so which
    /// value the variable keeps is random, build by build.
    ParameterCase {
        /// The keys as written, in file order.
        keys: Vec<String>,
    },
    /// Set only in the pipeline's `environment:`, which `metadata.environment` does not
    /// give to this kind of container (go-vela/server `compile.go` empties
    /// `envGlobalSteps` when `steps` is not listed); the server or a secret may still
    /// set it at build time.
    GlobalEnvironmentWithheld,
    /// Set nowhere in the pipeline: the server or a secret sets it at build time.
    Nowhere,
    /// A variable the Vela worker sets in the container's environment when the step
    /// runs, never the server's compiler: the SCM token as `VELA_NETRC_PASSWORD`,
    /// `VELA_GIT_TOKEN` and `VELA_GIT_TOKEN_EXPIRATION` (go-vela/worker v0.28.1
    /// `executor/linux/build.go` `UpdateSCMAuth`, lines 972–974 and 991–993) and the ID
    /// token request token `VELA_ID_TOKEN_REQUEST_TOKEN` (`executor/linux/step.go`
    /// line 122). The plugin step, which sees its own values, withholds them too: they
    /// are credentials.
    Worker,
}

/// Which field of a container holds the variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// `image:`.
    Image,
    /// `pull:`.
    Pull,
}

/// One variable whose value is known only when the build runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct UnresolvedVariable {
    /// The variable's name, without `${}`.
    pub name: String,
    /// The field it is in.
    pub field: Field,
    /// Where its value would come from.
    pub source: ValueSource,
    /// In source, the variable has a default (`${TAG:-1}`) that is never used: the
    /// compiler keeps an unknown variable as `${TAG}` and drops the default.
    pub default_ignored: bool,
}

/// An image that depends on values known only when the build runs
/// ([`crate::Disposition::Unresolved`]). Data only: the report's words for it are
/// made by the `pullcheck` crate's detail renderer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unresolved {
    /// Where the image is used; `None` in a compiled build (as a [`Problem`]'s `at`).
    pub at: Option<Position>,
    /// The image as written.
    pub image: String,
    /// Each variable the image or its `pull:` depends on, in order.
    pub variables: Vec<UnresolvedVariable>,
}
