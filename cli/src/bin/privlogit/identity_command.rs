//! `privlogit identity new --name hospital-a`: a party's key pair and self-signed certificate,
//! and the fingerprint to put in the study file; or, with a consortium authority (`identity ca`),
//! a certificate it issues for the party's name (`identity new --ca`).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use privlogit::protocols::transport::Identity;

use crate::outcome::Outcome;

/// Arguments of `privlogit identity`.
#[derive(Debug, Args)]
pub struct IdentityArgs {
    #[command(subcommand)]
    command: IdentityCommand,
}

#[derive(Debug, Subcommand)]
enum IdentityCommand {
    /// Write NAME.key (secret, mode 0600) and NAME.crt, and print the certificate's
    /// fingerprint for the study file.
    New {
        /// The party's name, as the study file will name it (letters, digits, '-', '_', '.').
        #[arg(long)]
        name: String,
        /// Directory to write the two files into.
        #[arg(long, value_name = "DIR", default_value = ".")]
        out: PathBuf,
        /// Have the consortium authority PREFIX (PREFIX.crt, PREFIX.key, from `identity ca`)
        /// issue the certificate for NAME instead of signing it itself.
        #[arg(long, value_name = "PREFIX")]
        ca: Option<PathBuf>,
    },
    /// Make a consortium certificate authority: NAME.key (secret) and NAME.crt, the file a
    /// study names as `ca = "NAME.crt"` so that parties are known by the certificates it issues
    /// for their names.
    Ca {
        /// The authority's file name.
        #[arg(long)]
        name: String,
        /// Directory to write the two files into.
        #[arg(long, value_name = "DIR", default_value = ".")]
        out: PathBuf,
    },
    /// Print the fingerprint of an existing certificate (PREFIX.crt and PREFIX.key).
    Show {
        /// The identity's path without extension, e.g. keys/hospital-a.
        #[arg(value_name = "PREFIX")]
        prefix: PathBuf,
    },
}

/// Runs `privlogit identity`.
pub fn run(args: IdentityArgs) -> Result<Outcome> {
    match args.command {
        IdentityCommand::New { name, out, ca } => {
            check_name(&name)?;
            let identity = match &ca {
                None => Identity::generate(&name)?,
                Some(prefix) => Identity::load(prefix)
                    .with_context(|| format!("cannot load the authority {}", prefix.display()))?
                    .issue(&name)?,
            };
            let (crt, key) = identity.save(&out.join(&name))?;
            eprintln!(
                "wrote {} (keep it secret) and {}",
                key.display(),
                crt.display()
            );
            println!("{}", identity.fingerprint());
        }
        IdentityCommand::Ca { name, out } => {
            check_name(&name)?;
            let authority = Identity::generate_authority()?;
            let (crt, key) = authority.save(&out.join(&name))?;
            eprintln!(
                "wrote {} (keep it secret: it makes identities) and {}; name the certificate in \
                 study files as ca = \"{}\"",
                key.display(),
                crt.display(),
                crt.display()
            );
            println!("{}", authority.fingerprint());
        }
        IdentityCommand::Show { prefix } => {
            let identity = Identity::load(&prefix)
                .with_context(|| format!("cannot load the identity {}", prefix.display()))?;
            println!("{}", identity.fingerprint());
        }
    }
    Ok(Outcome::Success)
}

/// A party's or authority's name: the study file's, a file name, and (issued) a DNS name.
fn check_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        || name.starts_with('.')
    {
        bail!(
            "--name {name:?}: use 1 to 64 letters, digits, '-', '_' or '.', not starting with '.'"
        );
    }
    Ok(())
}
