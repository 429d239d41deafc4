#!/usr/bin/env python3
"""Build devplane/apiserver/protobuf_schema.json from Kubernetes' own published .proto files.

kubectl sends built-in kinds as ``application/vnd.kubernetes.protobuf``. The server decodes them
with a table of wire schemas; this script makes that table instead of anyone copying it by hand.

Source: Debian's ``golang-k8s-api-dev``, ``golang-k8s-apimachinery-dev`` and
``golang-k8s-apiextensions-apiserver-dev`` packages (the upstream Go modules' source, with their
``generated.proto`` files), fetched with ``apt-get download`` from Debian unstable through a private
apt configuration in a temporary folder (the machine's own apt sources are left alone).

Each ``generated.proto`` gives field numbers and wire types; the Go structs beside it give what
the .proto cannot: the JSON name (``x-kubernetes-validations``), ``omitempty``/``omitzero``,
pointer fields, ``json:",inline"`` embedding and named slice types (``ExtraValue``).

Usage: ``python hack/generate_proto_table.py [--src DIR]`` (``--src`` reuses an extracted tree,
``.../usr/share/gocode/src``, instead of downloading).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PACKAGES = ("golang-k8s-api-dev", "golang-k8s-apimachinery-dev", "golang-k8s-apiextensions-apiserver-dev")
SUITE = "sid"
OUT = Path(__file__).resolve().parent.parent / "devplane" / "apiserver" / "protobuf_schema.json"

# Go packages whose kinds the dev server serves (or may be sent, like DeleteOptions and Scale).
GO_PACKAGES = (
    "k8s.io/api/core/v1",
    "k8s.io/api/apps/v1",
    "k8s.io/api/autoscaling/v1",
    "k8s.io/api/autoscaling/v2",
    "k8s.io/api/batch/v1",
    "k8s.io/api/coordination/v1",
    "k8s.io/api/rbac/v1",
    "k8s.io/api/policy/v1",
    "k8s.io/api/networking/v1",
    "k8s.io/api/authorization/v1",
    "k8s.io/api/authentication/v1",
    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1",
    "k8s.io/apimachinery/pkg/apis/meta/v1",
    "k8s.io/apimachinery/pkg/api/resource",
    "k8s.io/apimachinery/pkg/util/intstr",
    "k8s.io/apimachinery/pkg/runtime",
    "k8s.io/apimachinery/pkg/runtime/schema",
)
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
# Top-level messages: every kind with ObjectMeta in a served package, plus these.
EXTRA_ROOTS = (f"{META}.DeleteOptions", "k8s.io.apimachinery.pkg.runtime.Unknown")


def fetch(workdir: Path) -> tuple[Path, str]:
    """Download and unpack the Debian packages; returns the gocode src dir and the upstream version."""
    lists, cache, dl = workdir / "lists", workdir / "cache", workdir / "dl"
    for d in (lists / "partial", cache / "archives" / "partial", dl):
        d.mkdir(parents=True, exist_ok=True)
    sources = workdir / "sources.list"
    sources.write_text("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
                       f"http://deb.debian.org/debian {SUITE} main\n")
    opts = [f"-oDir::Etc::SourceList={sources}", "-oDir::Etc::SourceParts=/dev/null",
            f"-oDir::State::Lists={lists}", f"-oDir::Cache={cache}", "-oDir::State::status=/dev/null",
            "-oAPT::Sandbox::User=root"]
    subprocess.run(["apt-get", *opts, "update"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", *opts, "download", *PACKAGES], check=True, cwd=dl, stdout=subprocess.DEVNULL)
    versions = set()
    for deb in sorted(dl.glob("*.deb")):
        versions.add(deb.name.split("_")[1].split("-")[0])
        subprocess.run(["dpkg-deb", "-x", str(deb), str(workdir / "root")], check=True)
    return workdir / "root" / "usr" / "share" / "gocode" / "src", "/".join(sorted(versions))


# ---- .proto parsing (the subset go-to-protobuf writes: proto2, flat messages, map<,>)

_FIELD = re.compile(r"^(optional|repeated|required)?\s*([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(?:\[[^\]]*\])?;$")
_MAP = re.compile(r"^map\s*<\s*([\w.]+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;$")
SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
           "fixed32", "fixed64", "sfixed32", "sfixed64", "double", "float"}


@dataclass
class ProtoField:
    name: str
    number: int
    type: str
    repeated: bool = False
    map_key: str | None = None


@dataclass
class ProtoMessage:
    full_name: str
    fields: list[ProtoField] = field(default_factory=list)


def parse_proto(text: str) -> tuple[str, list[ProtoMessage]]:
    """Messages of one file, nested ones named ``Outer.Inner``; comments and options skipped."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    package = ""
    messages: list[ProtoMessage] = []
    stack: list[ProtoMessage | None] = []
    for raw in re.split(r"(?<=[;{}])", text):
        stmt = " ".join(raw.split())
        if not stmt:
            continue
        if stmt.startswith("package "):
            package = stmt[len("package "):].rstrip(";").strip()
        elif stmt.startswith("message ") and stmt.endswith("{"):
            name = stmt.split()[1]
            outer = next((m for m in reversed(stack) if m is not None), None)
            msg = ProtoMessage(f"{outer.full_name}.{name}" if outer else f"{package}.{name}")
            messages.append(msg)
            stack.append(msg)
        elif stmt.endswith("{"):
            stack.append(None)  # enum / oneof / service: not used by go-to-protobuf output we read
        elif stmt == "}":
            stack.pop()
        elif stack and stack[-1] is not None:
            current = stack[-1]
            if m := _MAP.match(stmt):
                current.fields.append(ProtoField(m[3], int(m[4]), m[2], map_key=m[1]))
            elif m := _FIELD.match(stmt):
                current.fields.append(ProtoField(m[3], int(m[4]), m[2], repeated=m[1] == "repeated"))
            elif not stmt.startswith(("option ", "reserved ", "extensions ")):
                raise SystemExit(f"{current.full_name}: cannot parse {stmt!r}")
    return package, messages


def resolve(type_name: str, scope: str, known: set[str]) -> str:
    """Protobuf scoping: try the innermost scope outward; a leading dot is absolute."""
    if type_name in SCALARS:
        return type_name
    if type_name.startswith("."):
        return type_name[1:]
    parts = scope.split(".")
    while parts:
        candidate = ".".join([*parts, type_name])
        if candidate in known:
            return candidate
        parts.pop()
    if type_name in known:
        return type_name
    raise SystemExit(f"unresolved type {type_name} in {scope}")


# ---- Go struct tags: JSON names and encoding rules

_STRUCT = re.compile(r"^type (\w+) struct \{(.*?)^\}", re.S | re.M)
_NAMED_SLICE = re.compile(r"^type (\w+) \[\](\S+)", re.M)
_GO_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`", re.M)


@dataclass
class GoField:
    json_name: str
    omitempty: bool
    omitzero: bool
    pointer: bool
    inline: bool


def parse_go(src: Path) -> tuple[dict[str, dict[int, GoField]], set[str], str]:
    """Per struct, proto field number → JSON encoding facts; named slice types; the group name."""
    structs: dict[str, dict[int, GoField]] = {}
    slices: set[str] = set()
    group = ""
    for path in sorted(src.glob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        text = path.read_text()
        if m := re.search(r'^const GroupName = "([^"]*)"', text, re.M):
            group = m[1]
        slices.update(m[1] for m in _NAMED_SLICE.finditer(text))
        for sm in _STRUCT.finditer(text):
            fields: dict[int, GoField] = {}
            for fm in _GO_FIELD.finditer(sm[2]):
                tag = fm[3]
                pm = re.search(r'protobuf:"[a-z0-9]+,(\d+),', tag)
                jm = re.search(r'json:"([^"]*)"', tag)
                if not pm or not jm:
                    continue
                opts = jm[1].split(",")
                inline = "inline" in opts[1:]
                fields[int(pm[1])] = GoField(json_name=opts[0], omitempty="omitempty" in opts[1:],
                                             omitzero="omitzero" in opts[1:],
                                             pointer=fm[2].startswith("*"), inline=inline)
            structs[sm[1]] = fields
    return structs, slices, group


def build(src: Path, version: str) -> dict[str, Any]:
    protos: dict[str, ProtoMessage] = {}
    package_of: dict[str, str] = {}
    go_info: dict[str, tuple[dict[str, dict[int, GoField]], set[str], str]] = {}
    for go_pkg in GO_PACKAGES:
        pkg_dir = src / go_pkg
        package, messages = parse_proto((pkg_dir / "generated.proto").read_text())
        go_info[package] = parse_go(pkg_dir)
        for msg in messages:
            protos[msg.full_name] = msg
            package_of[msg.full_name] = package
    known = set(protos)
    table: dict[str, Any] = {}
    for full_name, msg in protos.items():
        package = package_of[full_name]
        structs, slices, _ = go_info[package]
        short = full_name[len(package) + 1:]
        go_fields = structs.get(short, {})
        fields: list[dict[str, Any]] = []
        for f in msg.fields:
            g = go_fields.get(f.number)
            entry: dict[str, Any] = {"n": f.number, "name": g.json_name if g else f.name,
                                     "type": resolve(f.type, full_name, known)}
            if f.map_key:
                entry["key"] = f.map_key
            if f.repeated:
                entry["rep"] = True
            if g is None or g.omitempty:
                entry["omitempty"] = True
            if g is not None and g.omitzero:
                entry["omitzero"] = True
            if g is not None and g.pointer:
                entry["ptr"] = True
            if g is not None and g.inline:
                entry["inline"] = True
            fields.append(entry)
        message: dict[str, Any] = {"fields": fields}
        if short in slices:
            message["list"] = True  # a named Go slice: JSON is the array of its items
        table[full_name] = message
    kinds: dict[str, str] = {}
    for package, (_structs, _slices, group) in go_info.items():
        version_name = package.rsplit(".", 1)[1]
        api_version = f"{group}/{version_name}" if group else version_name
        for full_name, msg in protos.items():
            if package_of[full_name] == package and any(
                    f.name == "metadata" and f.type.endswith("ObjectMeta") for f in msg.fields):
                kinds[f"{api_version}/{full_name.rsplit('.', 1)[1]}"] = full_name
    kinds["autoscaling/v1/Scale"] = "k8s.io.api.autoscaling.v1.Scale"
    roots = set(kinds.values()) | set(EXTRA_ROOTS)
    reachable: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in reachable:
            continue
        reachable.add(name)
        todo.extend(f["type"] for f in table[name]["fields"] if f["type"] in table)
    return {
        "source": f"Debian {SUITE}: {', '.join(PACKAGES)} (upstream k8s.io modules v{version})",
        "moduleVersion": f"v{version}",
        "kubernetesVersion": "1." + version.split(".", 1)[1] if version.startswith("0.") else version,
        "kinds": dict(sorted(kinds.items())),
        "messages": {name: table[name] for name in sorted(reachable)},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, help="an extracted .../usr/share/gocode/src to reuse")
    parser.add_argument("--version", default="", help="upstream version of --src")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src, version = (args.src, args.version) if args.src else fetch(Path(tmp))
        data = build(src, version)
    args.out.write_text(json.dumps(data, separators=(",", ":"), sort_keys=False) + "\n")
    print(f"{args.out}: {len(data['messages'])} messages, {len(data['kinds'])} kinds, from {data['source']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
