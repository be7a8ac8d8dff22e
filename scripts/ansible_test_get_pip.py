"""Offline stand-in for ansible-test's get-pip bootstrap script.

ansible-test bootstraps pip into each sanity venv by downloading get-pip from
its own CI host, which networks limited to the package registries cannot reach
(measured on the CPU test host). It first looks for
~/.ansible/test/cache/get_pip_<version>.py: scripts/bootstrap.sh puts this file
there. Like get-pip it installs the bundled pip (ensurepip) and then runs
``pip install`` with the arguments it was given.
"""

import os
import subprocess
import sys

subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
# ensurepip runs pip with PIP_CONFIG_FILE=/dev/null, which drops a configured CA
# bundle; run the real install in a clean child with the caller's environment.
ENV = dict(os.environ)
ENV.pop("PIP_CONFIG_FILE", None)
ARGS = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + ARGS, env=ENV))
