//! The handshake that opens every connection, in one write: `HELLO 3
//! [AUTH user pass] SETNAME pipelab` (RESP3) or `[AUTH [user] pass]` +
//! `CLIENT SETNAME pipelab` (RESP2), then `SELECT db`.

use super::{reply_text, Conn, ConnSettings, ConnectError, RedisTarget, CLIENT_NAME};

impl Conn {
    /// Sends the handshake and reads one reply per step; the first error
    /// reply of a fatal step (all but `CLIENT SETNAME`) fails it, naming the
    /// step and Redis's error. Bounded by the caller (the connect timeout).
    pub(super) async fn handshake(&mut self, target: &RedisTarget, settings: &ConnSettings) -> Result<(), ConnectError> {
        let mut steps: Vec<(&'static str, Vec<Vec<u8>>, bool)> = Vec::new(); // (name, argv, fatal)
        let user = target.username.clone().unwrap_or_else(|| "default".into());
        if settings.resp3 {
            let mut argv: Vec<Vec<u8>> = vec!["HELLO".into(), "3".into()];
            if let Some(pass) = &target.password {
                argv.extend([b"AUTH".to_vec(), user.clone().into_bytes(), pass.clone().into_bytes()]);
            }
            argv.extend([b"SETNAME".to_vec(), CLIENT_NAME.into()]);
            steps.push(("HELLO 3", argv, true));
        } else {
            if let Some(pass) = &target.password {
                let mut argv: Vec<Vec<u8>> = vec!["AUTH".into()];
                if target.username.is_some() {
                    argv.push(user.clone().into_bytes());
                }
                argv.push(pass.clone().into_bytes());
                steps.push(("AUTH", argv, true));
            }
            // Not fatal: some proxies do not implement CLIENT SETNAME.
            steps.push(("CLIENT SETNAME", vec!["CLIENT".into(), "SETNAME".into(), CLIENT_NAME.into()], false));
        }
        if target.db != 0 {
            steps.push(("SELECT", vec!["SELECT".into(), target.db.to_string().into_bytes()], true));
        }
        let mut out = Vec::new();
        for (_, argv, _) in &steps {
            resp::encode_command(argv, &mut out);
        }
        let broken = |step: &'static str, e: &dyn std::fmt::Display| ConnectError::Broken { target: target.to_string(), step, error: e.to_string() };
        self.write(&out).await.map_err(|e| broken(steps[0].0, &e))?;
        let mut first_error = None;
        for (name, _, fatal) in &steps {
            let (reply, _) = self.read_reply().await.map_err(|e| broken(name, &e))?;
            if reply.is_error() && *fatal && first_error.is_none() {
                first_error = Some(ConnectError::Refused { target: target.to_string(), step: name, reply: reply_text(&reply) });
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

}
