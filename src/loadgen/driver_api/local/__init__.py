"""What a driver's local broker is built from: a process with its port, folder and log
(:mod:`.process`), a CA and server certificates (:mod:`.certs`), and a TLS front's parts
(:mod:`.front_io`, :mod:`.secured`)."""
