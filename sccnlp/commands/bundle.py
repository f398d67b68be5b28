"""`sccnlp bundle build|verify`: one directory with every artefact a deploy needs, for clusters without internet."""

from __future__ import annotations

import argparse
from pathlib import Path

from sccnlp.commands import add_command, add_group
from sccnlp.errors import SccError


def register(sub: argparse._SubParsersAction) -> None:
    bsub = add_group(
        sub, "bundle", "collect what a deploy installs into one verified directory (clusters without internet)",
        examples=["sccnlp bundle build -i inventory/static/hosts.yml -o scc-bundle",
                  "sccnlp bundle verify scc-bundle"])

    build = add_command(
        bsub, "build", "fetch the nodes' wheels and Debian packages for an inventory, write the manifest",
        details="Reads the inventory and the roles' defaults the way a deploy would, then fetches once: the wheels\n"
                "of the pip lock's sets for the nodes' Python and platform (pip download, sha256 checked against the\n"
                "lock); the Debian packages the roles install, with their dependencies, resolved by apt in a\n"
                "throwaway container of the nodes' image (scc_bundle_image) and indexed as a flat apt repository;\n"
                "and the files the settings name by URL with a sha256 (runfiles, tarballs, an AIACC wheel, a corpus)\n"
                "into files/. Writes manifest.json (name, version, source, sha256, size, role) and prints a summary\n"
                "with what could not be fetched and why. A re-run keeps what verifies and fetches the rest.\n"
                "Settings (inventory variables): scc_bundle_image [scc-testbed:bookworm], scc_bundle_roles [all].",
        examples=["sccnlp bundle build -i inventory/static/hosts.yml",
                  "sccnlp bundle build -i inventory/static/hosts.yml -o /srv/scc-bundle"])
    build.add_argument("-i", "--inventory", required=True, help="the inventory a deploy would use")
    build.add_argument("-o", "--output", default="scc-bundle", help="bundle directory [%(default)s]")
    build.add_argument("--container-name", default="",
                       help="name of the throwaway apt container [sccnlp-bundle-PID]")
    build.set_defaults(func=_build)

    verify = add_command(
        bsub, "verify", "check every file of a bundle against its manifest (sha256 and size)",
        details="Exit status 0 when every file verifies; 2 with one line per missing or changed file otherwise.",
        examples=["sccnlp bundle verify scc-bundle"])
    verify.add_argument("bundle", help="bundle directory")
    verify.set_defaults(func=_verify)


def _build(args: argparse.Namespace) -> int:
    from sccnlp.bundle import build
    from sccnlp.inventory import inventory_json
    from sccnlp.paths import collection_root, data_dir

    if not Path(args.inventory).exists():
        raise SccError(f"inventory {args.inventory} does not exist: pass -i with the inventory a deploy would use")
    data = inventory_json(args.inventory)
    hostvars = build.cluster_hostvars(data, args.inventory)
    try:
        result = build.build(Path(args.output), hostvars, collection_root(), data_dir(),
                             container=args.container_name)
    except OSError as exc:
        raise SccError(f"bundle {args.output}: {exc}. Fix: pass -o a directory this user can write") from exc
    print("\n".join(build.summary_lines(result)))
    return 0


def _verify(args: argparse.Namespace) -> int:
    from sccnlp.bundle import manifest

    bundle = Path(args.bundle)
    doc = manifest.load(bundle)
    problems = manifest.verify(bundle, doc)
    if problems:
        raise manifest.BundleError("\n".join(problems))
    s = manifest.summary(doc)
    print(f"{bundle}: {s['count']} files, {s['total_bytes'] / 1e6:.1f} MB verified against {manifest.MANIFEST}")
    return 0
