#!/usr/bin/python3
"""A real SMTP server for the mail tests (aiosmtpd, Debian's python3-aiosmtpd).

Every accepted message is written to --dir as NNNN.eml (the bytes as
received, after SMTP dot-unstuffing) with NNNN.json beside it (envelope
sender, recipients, the AUTH login if any). Files are renamed into place,
so a reader never sees half a message.

--auth USER:PASSWORD  requires AUTH (PLAIN/LOGIN, allowed without TLS: the
                      tests talk to 127.0.0.1 only).
--kill-file PATH      when PATH exists and holds a pid: after storing the
                      message and BEFORE answering 250, SIGKILL that pid and
                      delete PATH. This is how a test crashes a real walwatch
                      between "the server has the message" and "walwatch
                      marked it sent", without failpoints in walwatch.

--tls-cert/--tls-key with --tls-mode starttls|implicit
                      serve STARTTLS (then required before MAIL) or implicit
                      TLS from the first byte.

Prints "ready" on stdout once it accepts connections.
"""

import argparse
import json
import os
import ssl
import signal
import sys
import threading
import warnings

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Sink:
    def __init__(self, directory, kill_file):
        self.directory = directory
        self.kill_file = kill_file
        self.lock = threading.Lock()
        self.count = len([n for n in os.listdir(directory) if n.endswith(".eml")])

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.count += 1
            n = self.count
        base = os.path.join(self.directory, "%04d" % n)
        content = envelope.original_content or envelope.content
        login = session.auth_data if session.authenticated else None
        meta = {"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos, "login": login}
        write_atomically(base + ".json", json.dumps(meta).encode())
        write_atomically(base + ".eml", content)
        self.maybe_kill()
        return "250 Message accepted for delivery"

    def maybe_kill(self):
        if not self.kill_file or not os.path.exists(self.kill_file):
            return
        with open(self.kill_file) as f:
            pid = int(f.read().strip())
        os.unlink(self.kill_file)
        os.kill(pid, signal.SIGKILL)


def write_atomically(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


def authenticator(user, password):
    def check(server, session, envelope, mechanism, auth_data):
        ok = (
            isinstance(auth_data, LoginPassword)
            and auth_data.login.decode() == user
            and auth_data.password.decode() == password
        )
        # handled=False: aiosmtpd answers 535 itself (the default leaves the client waiting).
        return AuthResult(success=ok, handled=False, auth_data=user if ok else None)

    return check


def main():
    # aiosmtpd warns about AUTH without TLS; the tests only use 127.0.0.1.
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--auth")
    parser.add_argument("--kill-file")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--tls-mode", choices=["starttls", "implicit"])
    args = parser.parse_args()
    kwargs = {}
    if args.tls_mode:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        if args.tls_mode == "starttls":
            kwargs.update(tls_context=context, require_starttls=True)
        else:
            kwargs.update(ssl_context=context)
    if args.auth:
        user, password = args.auth.split(":", 1)
        kwargs.update(auth_required=True, auth_require_tls=False, authenticator=authenticator(user, password))
    controller = Controller(Sink(args.dir, args.kill_file), hostname="127.0.0.1", port=args.port, **kwargs)
    controller.start()
    print("ready", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    controller.stop()


if __name__ == "__main__":
    sys.exit(main())
