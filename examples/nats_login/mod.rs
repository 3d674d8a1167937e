//! How the NATS examples log in to nats-server: `--user NAME --password PASS`,
//! `--creds FILE` (a decentralised-auth credentials file) or `--token TOKEN`
//! (a server token), none of which async-nats takes from the URL. A user's
//! answers come to its own inbox, `_INBOX.<user>.`, as `interop/nats/roles.conf`
//! lets each user read only its own.

use std::path::PathBuf;

use toolfunc::nats::async_nats;

/// The credentials given on the command line.
#[derive(Default)]
pub(crate) struct Login {
    user: Option<String>,
    password: Option<String>,
    creds: Option<PathBuf>,
    token: Option<String>,
}

impl Login {
    /// Takes `flag` (and its value from `args`) when it is a login flag: `Some`
    /// with whether its value was there, `None` for another flag.
    pub(crate) fn take(
        &mut self,
        flag: &str,
        args: &mut impl Iterator<Item = String>,
    ) -> Option<bool> {
        let slot = match flag {
            "--user" => &mut self.user,
            "--password" => &mut self.password,
            "--token" => &mut self.token,
            "--creds" => {
                self.creds = args.next().map(PathBuf::from);
                return Some(self.creds.is_some());
            }
            _ => return None,
        };
        *slot = args.next();
        Some(slot.is_some())
    }

    /// The usage text of the login flags.
    pub(crate) const USAGE: &'static str =
        "[--user NAME --password PASS | --creds FILE | --token TOKEN]";

    /// Connects to `url` with these credentials.
    pub(crate) async fn connect(&self, url: &str) -> Result<async_nats::Client, String> {
        let mut options = match (&self.user, &self.password, &self.creds, &self.token) {
            (Some(user), Some(password), None, None) => {
                async_nats::ConnectOptions::with_user_and_password(user.clone(), password.clone())
                    .custom_inbox_prefix(format!("_INBOX.{user}"))
            }
            (None, None, Some(creds), None) => {
                async_nats::ConnectOptions::with_credentials_file(creds)
                    .await
                    .map_err(|err| format!("cannot read {}: {err}", creds.display()))?
            }
            (None, None, None, Some(token)) => {
                async_nats::ConnectOptions::with_token(token.clone())
            }
            (None, None, None, None) => async_nats::ConnectOptions::new(),
            _ => {
                return Err(
                    "give one login: --user with --password, --creds, or --token".to_owned(),
                );
            }
        };
        options = options.name("toolfunc example");
        options
            .connect(url)
            .await
            .map_err(|err| format!("cannot connect to {url}: {err}"))
    }
}
