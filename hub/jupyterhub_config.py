# The class server: a stock JupyterHub on one machine (the teacher's guide, "A class server").
# This is the one file a teacher edits. `sudo make hub` reads it, sets everything up (the
# students' Python, the course, one Unix account per student) and starts the hub with it.
#
# ---- Edit these ---------------------------------------------------------------------------
# The class list: one student a line, "username,full name" (a file beside this one). A username
# becomes that student's Unix account and JupyterHub login: lowercase letters, digits, _ and -.
ROSTER = "roster.csv"
# Teachers: accounts that may see every student's server and run `make hub-collect`.
TEACHERS = ["teacher"]
# Where the hub listens, and the address students type (give your server's name here, and put
# HTTPS in front of it, e.g. with nginx or caddy, before students log in from outside).
BIND_URL = "http://0.0.0.0:8000"
PUBLIC_URL = "http://localhost:8000"
# The hub's own ports on this machine (change them only if another program uses them).
HUB_PORT = 8081
PROXY_API_PORT = 8001
# The folder the hub keeps everything in: the students' Python, the course, its own state.
HUB_DIR = "/srv/attention-hub"
# Which edition the links open: "en" or "zh" (the course holds both; the other is in zh/ or /).
LANGUAGE = "en"
# A student's server is stopped after this many minutes without activity (their files stay).
IDLE_MINUTES = 60
# Memory and CPU per student. The local spawner cannot enforce them on one machine (it only
# shows them to the server as MEM_LIMIT and CPU_LIMIT): see the guide; Zero to JupyterHub does.
MEMORY_LIMIT = "2G"
CPU_LIMIT = 1.0
# ---- The rest wires JupyterHub to the settings above; leave it as it is. ---------------------
from pathlib import Path  # noqa: E402

STATE = Path(HUB_DIR) / "state"       # the hub's database, cookie secret, pids: root only
ENV = Path(HUB_DIR) / "env"           # the students' Python (make hub installs it)
c = get_config()  # noqa: F821 - JupyterHub's config loader provides it

c.JupyterHub.bind_url = BIND_URL
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{HUB_PORT}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PROXY_API_PORT}"
c.ConfigurableHTTPProxy.command = [str(Path(HUB_DIR) / "proxy" / "node_modules" / ".bin"
                                       / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.data_files_path = str(ENV / "share" / "jupyterhub")
c.JupyterHub.cleanup_servers = True

# Log in with the Unix account's password (PAM): no identity provider, no second list of
# users; `make hub-users` creates the accounts of ROSTER with a first password each.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False
c.Authenticator.admin_users = set(TEACHERS)
ROSTER_FILE = Path(__file__).resolve().parent / ROSTER   # make hub checks it line by line
STUDENTS = [line.split(",")[0].strip() for line in (
    ROSTER_FILE.read_text(encoding="utf-8").splitlines() if ROSTER_FILE.is_file() else [])
    if line.strip() and not line.startswith("#") and not line.startswith("username,")]
c.Authenticator.allowed_users = set(STUDENTS) | set(TEACHERS)

# Each student's JupyterLab runs as their own Unix account, in their home (mode 700), with the
# reader's environment; the course comes by nbgitpuller links (make hub-links).
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(ENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.env_keep = ["LANG", "LC_ALL"]
c.Spawner.environment = {
    "PATH": f"{ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
    "GIT_CONFIG_SYSTEM": str(Path(HUB_DIR) / "gitconfig"),   # lets git clone the course
    "BOOK_LANG": LANGUAGE,
    "OMP_NUM_THREADS": str(max(1, int(CPU_LIMIT))),
}
c.Spawner.mem_limit = MEMORY_LIMIT
c.Spawner.cpu_limit = CPU_LIMIT
c.Spawner.http_timeout = 90
c.Spawner.start_timeout = 180

# Idle servers are stopped (jupyterhub-idle-culler, run by the hub as a service).
c.JupyterHub.services = [{
    "name": "idle-culler",
    "command": [str(ENV / "bin" / "python3"), "-m", "jupyterhub_idle_culler",
                f"--timeout={int(IDLE_MINUTES * 60)}"],
}]
c.JupyterHub.load_roles = [{
    "name": "idle-culler",
    "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
    "services": ["idle-culler"],
}]
