"""Checks that a Hyperspace jar links on every checked patch of its Spark line.

A line's jar is compiled against one patch (``spark.<line>`` in versions.properties) but runs on
whichever patch a user or a managed runtime has. A class or member that patch lacks surfaces as a
``NoSuchMethodError``, ``NoSuchFieldError`` or ``NoClassDefFoundError`` in the middle of a query.
This reads the jar's class files (their constant pools: every class, field and method they
reference) and resolves each reference outside the JDK (Spark, Parquet, Hadoop, Jackson, the Scala
library, the few other libraries Spark ships that the jar calls, Delta, Iceberg) the way the JVM
links it (JVMS 5.4.3: the named class, then its superclasses and interfaces) against the jars of
each patch in ``spark.patches.<line>``: the pyspark sdist's ``deps/jars`` for Spark and what it
ships, the line's pinned Delta and Iceberg jars from Maven Central. A member that exists with
another descriptor counts as missing, as does one that is private, and so does an abstract method
of a supertype that a class of ours leaves unimplemented on the patch (an ``AbstractMethodError``).
The report names each missing class or member and the classes of ours that reference it. Not seen:
a member that turned static or back (the constant pool does not say how it is called), and
behaviour that differs with the same signature (``make test-spark-patches`` runs a lookup there).

Downloads are cached under ``--cache`` (the Makefile's ``HS_CACHE``): per patch only the jars the
check reads (about 125 MB, not the 450 MB sdist), so a cached run reads no network.

    python tools/spark_patches.py --line 4.1 --jar target/spark-4.1/scala-2.13/hyperspace-....jar

``--spark-jars VERSION`` instead keeps every jar of that pyspark (``HS_CACHE/spark-jars/VERSION``,
about 460 MB) and prints their directory: build.sbt compiles and tests a line whose Spark is not on
Maven Central (``spark.source.<line>=pyspark``) against them, and the check then reads those.

    python tools/spark_patches.py --spark-jars 4.3.0
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"

# Every reference outside our own classes and the JDK (java/, javax/, jdk/, sun/: the same whatever
# the patch) is resolved against each patch: Spark, Parquet, Hadoop, Jackson, the Scala library and
# the other libraries Spark ships and we call (zstd, lz4, ...), and Delta and Iceberg.
JDK = ("java/", "javax/", "jdk/", "sun/", "com/sun/")
# The jars of pyspark's deps/jars/ a patch's check reads: those providing the classes we reference
# and their supertypes. A class in none of them is reported (then add its jar here).
PATCH_JARS = (
    "spark-*.jar",
    "parquet-*.jar",
    "hadoop-client-api-*.jar",
    "jackson-*.jar",
    "scala-library-*.jar",
    "scala-reflect-*.jar",
    "kryo-shaded-*.jar",
    "zstd-jni-*.jar",
    "lz4-java-*.jar",
    "pickle-*.jar",
    "slf4j-api-*.jar",
)

ACC_PRIVATE = 0x0002
ACC_STATIC = 0x0008
ACC_INTERFACE = 0x0200
ACC_ABSTRACT = 0x0400


# ---- class files -------------------------------------------------------------------------------


@dataclass
class ClassFile:
    """What linking needs of a class file: its supertypes, members and constant-pool references."""

    name: str
    access: int
    super_name: str | None
    interfaces: list[str]
    fields: dict[tuple[str, str], int]  # (name, descriptor) -> access flags
    methods: dict[tuple[str, str], int]
    # (kind, owner, name, descriptor): kind is "class", "field", "method" or "imethod".
    refs: set[tuple[str, str, str, str]] = field(default_factory=set)

    @property
    def is_interface(self) -> bool:
        return bool(self.access & ACC_INTERFACE)


def parse_class(data: bytes, with_refs: bool = False) -> ClassFile:
    """Parses a class file (JVMS 4.1): the constant pool, supertypes and members."""
    if data[:4] != b"\xca\xfe\xba\xbe":
        raise ValueError("not a class file")
    count = struct.unpack_from(">H", data, 8)[0]
    pos = 10
    utf8: dict[int, str] = {}
    entries: dict[int, tuple[int, int, int]] = {}  # index -> (tag, a, b)
    i = 1
    while i < count:
        tag = data[pos]
        if tag == 1:  # Utf8
            length = struct.unpack_from(">H", data, pos + 1)[0]
            utf8[i] = data[pos + 3 : pos + 3 + length].decode("utf-8", "replace")
            pos += 3 + length
        elif tag in (7, 8, 16, 19, 20):  # Class, String, MethodType, Module, Package
            entries[i] = (tag, struct.unpack_from(">H", data, pos + 1)[0], 0)
            pos += 3
        elif tag == 15:  # MethodHandle: its reference is an ordinary Fieldref/Methodref entry
            pos += 4
        elif tag in (9, 10, 11, 12, 17, 18):  # Field/Method/InterfaceMethodref, NameAndType, (Invoke)Dynamic
            a, b = struct.unpack_from(">HH", data, pos + 1)
            entries[i] = (tag, a, b)
            pos += 5
        elif tag in (3, 4):  # Integer, Float
            pos += 5
        elif tag in (5, 6):  # Long, Double take two slots
            pos += 9
            i += 1
        else:
            raise ValueError(f"unknown constant pool tag {tag}")
        i += 1

    def class_name(index: int) -> str:
        return utf8[entries[index][1]]

    access, this_index, super_index, n_interfaces = struct.unpack_from(">HHHH", data, pos)
    pos += 8
    interfaces = [class_name(struct.unpack_from(">H", data, pos + 2 * k)[0]) for k in range(n_interfaces)]
    pos += 2 * n_interfaces

    def members() -> dict[tuple[str, str], int]:
        nonlocal pos
        out: dict[tuple[str, str], int] = {}
        (n,) = struct.unpack_from(">H", data, pos)
        pos += 2
        for _ in range(n):
            flags, name_index, desc_index, n_attrs = struct.unpack_from(">HHHH", data, pos)
            pos += 8
            for _ in range(n_attrs):
                pos += 6 + struct.unpack_from(">I", data, pos + 2)[0]
            out[(utf8[name_index], utf8[desc_index])] = flags
        return out

    fields = members()
    methods = members()
    cls = ClassFile(
        name=class_name(this_index),
        access=access,
        super_name=class_name(super_index) if super_index else None,
        interfaces=interfaces,
        fields=fields,
        methods=methods,
    )
    if with_refs:
        kinds = {9: "field", 10: "method", 11: "imethod"}
        for tag, a, b in entries.values():
            if tag == 7:
                cls.refs.add(("class", element_class(utf8[a]) or "", "", ""))
            elif tag in kinds:
                _, name_index, desc_index = entries[b]
                owner = element_class(class_name(a))
                if owner:  # members of arrays (clone) are the JVM's own
                    cls.refs.add((kinds[tag], owner, utf8[name_index], utf8[desc_index]))
        # The types in the signatures of our own members must load too (the verifier may ask).
        for _, desc in (*fields, *methods):
            for name in descriptor_classes(desc):
                cls.refs.add(("class", name, "", ""))
        cls.refs.discard(("class", "", "", ""))
    return cls


def element_class(name: str) -> str | None:
    """The class of a Class constant: itself, or an array's element class (None for primitives)."""
    if not name.startswith("["):
        return name
    name = name.lstrip("[")
    return name[1:-1] if name.startswith("L") else None


def descriptor_classes(desc: str) -> Iterator[str]:
    """The class names in a field or method descriptor."""
    i = 0
    while i < len(desc):
        if desc[i] == "L":
            end = desc.index(";", i)
            yield desc[i + 1 : end]
            i = end + 1
        else:
            i += 1


def pretty_type(desc: str) -> tuple[str, str]:
    """The first type of a descriptor in source form, and what follows it."""
    dims = len(desc) - len(desc.lstrip("["))
    desc = desc[dims:]
    if desc[0] == "L":
        end = desc.index(";")
        name, rest = desc[1:end].replace("/", "."), desc[end + 1 :]
    else:
        prims = {"B": "byte", "C": "char", "D": "double", "F": "float", "I": "int", "J": "long"}
        name = {**prims, "S": "short", "Z": "boolean", "V": "void"}[desc[0]]
        rest = desc[1:]
    return name + "[]" * dims, rest


def pretty_member(kind: str, owner: str, name: str, desc: str) -> str:
    """``method org.apache.Foo.bar(int, java.lang.String): boolean`` for a reference."""
    where = owner.replace("/", ".")
    if kind == "class":
        return f"class {where}"
    return f"{'field' if kind == 'field' else 'method'} {where}.{signature(name, desc)}"


def signature(name: str, desc: str) -> str:
    """``bar(int, java.lang.String): boolean`` of a member's name and descriptor."""
    if not desc.startswith("("):
        return f"{name}: {pretty_type(desc)[0]}"
    params, rest = [], desc[1:]
    while not rest.startswith(")"):
        param, rest = pretty_type(rest)
        params.append(param)
    return f"{name}({', '.join(params)}): {pretty_type(rest[1:])[0]}"


# ---- class paths -------------------------------------------------------------------------------


class ClassPath:
    """Classes by internal name from archives (jars, or jmods with their classes under classes/),
    the first one holding a name winning as on a JVM class path; then the JDK's, for its packages."""

    def __init__(self, archives: Iterable[Path], jdk: ClassPath | None = None, later: Iterable[Path] = ()) -> None:
        self._where: dict[str, tuple[zipfile.ZipFile, str]] = {}
        self._parsed: dict[str, ClassFile | None] = {}
        self._jdk, self._later = jdk, list(later)
        self._index(archives)

    def _index(self, archives: Iterable[Path]) -> None:
        for path in archives:
            # A jmod is a zip behind a 4-byte header, which zipfile skips.
            archive, prefix = zipfile.ZipFile(path), "classes/" if path.suffix == ".jmod" else ""
            for entry in archive.namelist():
                if entry.endswith(".class") and entry.startswith(prefix) and "META-INF/" not in entry:
                    self._where.setdefault(entry[len(prefix) : -6], (archive, entry))

    def get(self, name: str) -> ClassFile | None:
        if name not in self._parsed:
            if name not in self._where and self._later:  # archives read only when one is needed
                self._index(self._later)
                self._later = []
            found = self._where.get(name)
            if found:
                self._parsed[name] = parse_class(found[0].read(found[1]))
            else:
                self._parsed[name] = self._jdk.get(name) if self._jdk and name.startswith(JDK) else None
        return self._parsed[name]

    @staticmethod
    def of_jdk(home: Path) -> ClassPath:
        """The JDK's classes: java.base at once, its other modules when a class is not there."""
        modules = sorted((home / "jmods").glob("*.jmod"))
        base = [m for m in modules if m.name == "java.base.jmod"]
        return ClassPath(base, later=[m for m in modules if m not in base])


def jdk_home() -> Path:
    """The JDK whose jmods give the JDK classes' members (JAVA_HOME, else the `java` on the path)."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "jmods").is_dir():
        return Path(home)
    java = shutil.which("java")
    if java:
        candidate = Path(os.path.realpath(java)).parent.parent
        if (candidate / "jmods").is_dir():
            return candidate
    sys.exit("spark_patches: no JDK with jmods/ found (set JAVA_HOME to a JDK 17, not a JRE)")


# ---- linking -----------------------------------------------------------------------------------


class Linker:
    """Resolves references as the JVM does (JVMS 5.4.3.2-5.4.3.4) on one class path."""

    def __init__(self, own: dict[str, ClassFile], patch: ClassPath) -> None:
        self.own, self.patch = own, patch
        self.unknown: set[str] = set()  # supertypes found nowhere: the check cannot see past them

    def cls(self, name: str) -> ClassFile | None:
        return self.own.get(name) or self.patch.get(name)

    def supertypes(self, name: str) -> Iterator[ClassFile]:
        """The class, its superclasses and all their interfaces, each once."""
        seen: set[str] = set()
        stack = [name]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            c = self.cls(current)
            if c is None:
                self.unknown.add(current)
                continue
            yield c
            stack.extend(reversed(c.interfaces))
            if c.super_name:
                stack.append(c.super_name)

    def superclasses(self, name: str) -> Iterator[ClassFile]:
        current: str | None = name
        while current:
            c = self.cls(current)
            if c is None:
                self.unknown.add(current)
                return
            yield c
            current = c.super_name

    def problem(self, kind: str, owner: str, name: str, desc: str) -> str | None:
        """Why the reference does not link on this class path, or None when it does."""
        c = self.cls(owner)
        if c is None:
            return "the class does not exist"
        if kind == "class":
            return None
        key = (name, desc)
        if kind == "field":
            # Fields: the class, then its interfaces, then its superclass (JVMS 5.4.3.2).
            found = next((t for t in self.supertypes(owner) if key in t.fields), None)
            flags = found.fields[key] if found else 0
        else:
            if kind == "method" and c.is_interface:
                return "it is an interface here, called as a class"
            if kind == "imethod" and not c.is_interface:
                return "it is a class here, called as an interface"
            # Methods: the class and its superclasses (an interface: itself and Object), then the
            # superinterfaces (JVMS 5.4.3.3, 5.4.3.4).
            chain = self.superclasses(owner) if kind == "method" else iter([c, *self.superclasses("java/lang/Object")])
            found = next((t for t in chain if key in t.methods), None) or next(
                (t for t in self.supertypes(owner) if key in t.methods), None
            )
            flags = found.methods[key] if found else 0
        if found is None:
            others = sorted(
                {
                    signature(n, d)
                    for t in self.supertypes(owner)
                    for (n, d) in (t.fields if kind == "field" else t.methods)
                    if n == name
                }
            )
            return f"absent; it has {'; '.join(others)}" if others else "absent"
        if flags & ACC_PRIVATE and found.name not in self.own:
            return f"it is private in {found.name.replace('/', '.')}"
        return None

    def unimplemented(self, c: ClassFile) -> list[str]:
        """Abstract methods of the supertypes of a concrete class of ours that nothing implements."""
        if c.access & (ACC_ABSTRACT | ACC_INTERFACE):
            return []
        concrete: set[tuple[str, str]] = set()
        for t in self.superclasses(c.name):
            concrete.update(k for k, f in t.methods.items() if not f & (ACC_ABSTRACT | ACC_STATIC | ACC_PRIVATE))
        abstract: dict[tuple[str, str], str] = {}
        for t in self.supertypes(c.name):
            for k, f in t.methods.items():
                if f & ACC_ABSTRACT:
                    abstract.setdefault(k, t.name)
                elif t.is_interface and not f & (ACC_STATIC | ACC_PRIVATE):
                    concrete.add(k)  # a default method
        return [
            pretty_member("method", owner, *k)
            for k, owner in sorted(abstract.items())
            if k not in concrete and owner not in self.own and not owner.startswith(JDK)
        ]


# ---- downloads ---------------------------------------------------------------------------------


def sdist_jars(version: str, home: Path, keep: Callable[[str], bool], cache: Path) -> None:
    """Extracts the jars of pyspark ``version``'s sdist (``deps/jars/``) that ``keep`` takes into ``home``."""
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        started = time.monotonic()
        print(f"spark_patches: downloading pyspark {version} (once; kept in {home})", file=sys.stderr, flush=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-cache-dir"]
            + ["--no-binary", "pyspark", f"pyspark=={version}", "-d", tmp],
            check=True,
            stdout=sys.stderr,
        )
        (archive,) = Path(tmp).glob("pyspark-*")
        with tarfile.open(archive, mode="r|gz") as tar:
            for member in tar:
                parts = member.name.split("/")
                if len(parts) == 4 and parts[1:3] == ["deps", "jars"] and keep(parts[3]):
                    source = tar.extractfile(member)
                    assert source is not None
                    with source, open(home / parts[3], "wb") as out:
                        shutil.copyfileobj(source, out)
        took = time.monotonic() - started
        print(f"spark_patches: pyspark {version}'s jars in {took:.0f} s", file=sys.stderr, flush=True)
    if not any(home.glob("spark-sql_*.jar")):
        sys.exit(f"spark_patches: pyspark {version}'s sdist had no deps/jars/spark-sql_*.jar")


def spark_jars(version: str, cache: Path) -> Path:
    """The directory of every jar pyspark ``version`` ships, fetched once into the cache.

    For a line whose Spark is not on Maven Central (``spark.source.<line>=pyspark``): build.sbt
    compiles and tests against these, as the user's pyspark runs the jar with them.
    """
    home = cache / "spark-jars" / version
    marker = home / ".complete"
    if not marker.exists():
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        sdist_jars(version, home, lambda name: name.endswith(".jar"), cache)
        marker.write_text(version)
    return home


def patch_jars(version: str, cache: Path) -> list[Path]:
    """The jars of pyspark ``version`` the check reads, fetched once into the cache (pip download)."""
    full = cache / "spark-jars" / version
    if (full / ".complete").exists():
        # A line compiled against this patch's jars has them all already: no second download.
        return sorted(j for j in full.glob("*.jar") if matches_patch_jar(j.name))
    home = cache / "spark-patches" / version
    marker, kept = home / ".complete", "\n".join(PATCH_JARS)
    if not marker.exists() or marker.read_text() != kept:
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        sdist_jars(version, home, matches_patch_jar, cache)
        marker.write_text(kept)
    return sorted(home.glob("*.jar"))


def matches_patch_jar(name: str) -> bool:
    return any(fnmatch.fnmatch(name, p) for p in PATCH_JARS)


def maven_jar(group: str, artifact: str, version: str, cache: Path) -> Path:
    """A jar from Maven Central, reusing sbt's coursier cache when it has it."""
    rel = f"{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.jar"
    for base in (cache / "coursier-home" / "cache" / "https" / "repo1.maven.org" / "maven2", cache / "maven"):
        if (base / rel).is_file():
            return base / rel
    target = cache / "maven" / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"spark_patches: downloading {artifact}-{version}.jar from Maven Central", flush=True)
    with urllib.request.urlopen(f"{MAVEN_CENTRAL}/{rel}", timeout=300) as response, open(f"{target}.part", "wb") as out:
        shutil.copyfileobj(response, out)
    os.replace(f"{target}.part", target)
    return target


def versions() -> dict[str, str]:
    pairs = (
        line.split("=", 1)
        for line in (ROOT / "versions.properties").read_text().splitlines()
        if "=" in line and not line.lstrip().startswith("#")
    )
    return {k.strip(): v.strip() for k, v in pairs}


def table_format_jars(line: str, v: dict[str, str], cache: Path) -> list[Path]:
    """The line's pinned Delta and Iceberg jars (the check resolves our io.delta / iceberg refs there)."""
    jars = []
    delta = v.get(f"delta.{line}", v.get("delta", "none"))
    if delta != "none":
        jars += [
            maven_jar("io.delta", "delta-spark_2.13", delta, cache),
            maven_jar("io.delta", "delta-storage", delta, cache),
        ]
    iceberg = v.get(f"iceberg.{line}", v.get("iceberg", "none"))
    if iceberg != "none":
        jars.append(maven_jar("org.apache.iceberg", f"iceberg-spark-runtime-{line}_2.13", iceberg, cache))
    return jars


# ---- the check ---------------------------------------------------------------------------------


def own_classes(jar: Path) -> dict[str, ClassFile]:
    with zipfile.ZipFile(jar) as z:
        return {
            c.name: c for c in (parse_class(z.read(e), with_refs=True) for e in z.namelist() if e.endswith(".class"))
        }


Problems = dict[str, list[tuple[str, set[str]]]]
"""Per missing class or member (as source-like text): why, and the classes of ours using it."""


def problems(own: dict[str, ClassFile], patch: ClassPath) -> Problems:
    """What of our classes' references outside the JDK does not link on ``patch``'s class path."""
    users: dict[tuple[str, str, str, str], set[str]] = defaultdict(set)
    for c in own.values():
        for ref in c.refs:
            if not ref[1].startswith(JDK):
                users[ref].add(c.name.replace("/", "."))
    linker = Linker(own, patch)
    found: Problems = defaultdict(list)
    for ref, who in sorted(users.items()):
        why = linker.problem(*ref)
        if why:
            found[pretty_member(*ref)].append((why, who))
    for c in own.values():
        for member in linker.unimplemented(c):
            found[member].append(("abstract, and not implemented", {c.name.replace("/", ".")}))
    for u in sorted(u for u in linker.unknown if not u.startswith(JDK) and u not in own):
        found[pretty_member("class", u, "", "")].append(("a supertype in none of the jars read: see PATCH_JARS", set()))
    return dict(found)


def check(jar: Path, line: str, patches: list[str], cache: Path) -> int:
    """Prints what of ``jar`` does not link on each patch; 1 if anything, else 0."""
    started = time.monotonic()
    own = own_classes(jar)
    extra = table_format_jars(line, versions(), cache)
    jdk = ClassPath.of_jdk(jdk_home())
    refs = {ref for c in own.values() for ref in c.refs if not ref[1].startswith(JDK)}
    formats = ", ".join(j.name for j in extra) or "no Delta or Iceberg"
    print(
        f"spark_patches: {jar.name}: {len(own)} classes, {len(refs)} references outside the JDK; "
        f"checked against Spark {' and '.join(patches)} with {formats}"
    )
    failed = []
    for patch in patches:
        found = problems(own, ClassPath([*patch_jars(patch, cache), *extra], jdk))
        if not found:
            print(f"Spark {patch}: every reference links")
            continue
        failed.append(patch)
        print(f"Spark {patch}: {len(found)} missing (a NoSuchMethodError, NoSuchFieldError, ... on this patch):")
        for member, whys in sorted(found.items()):
            for why, who in whys:
                print(f"  {member}\n      {why}{'; used by ' + ', '.join(sorted(who)) if who else ''}")
    print(f"spark_patches: {time.monotonic() - started:.1f} s")
    if failed:
        print(
            f"spark_patches: {jar.name} does not link on Spark {' and '.join(failed)}: put each member above "
            'behind the shims, resolved by key name or reflection once (docs/architecture.md, "Patches of a line")'
        )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--line", help="the Spark line the jar was built for (4.1)")
    parser.add_argument("--jar", type=Path, help="the line's Hyperspace jar")
    parser.add_argument(
        "--spark-jars",
        metavar="VERSION",
        help="instead of a check: fetch every jar of pyspark VERSION once and print their directory (build.sbt)",
    )
    parser.add_argument("--patches", help="Spark patches to check (default: spark.patches.<line>)")
    default_cache = os.environ.get("HS_CACHE") or Path.home() / ".cache" / "hyperspace-build"
    parser.add_argument("--cache", type=Path, default=default_cache, help="downloads (default: HS_CACHE)")
    args = parser.parse_args(argv)
    if args.spark_jars:
        args.cache.mkdir(parents=True, exist_ok=True)
        print(spark_jars(args.spark_jars, args.cache))
        return 0
    if not args.line or not args.jar:
        parser.error("--line and --jar are required (or --spark-jars VERSION)")
    patches = (args.patches or versions().get(f"spark.patches.{args.line}", "")).split()
    if not patches:
        parser.error(f"versions.properties has no spark.patches.{args.line}")
    if not args.jar.is_file():
        parser.error(f"no jar at {args.jar}: run make jar SPARK={args.line}")
    args.cache.mkdir(parents=True, exist_ok=True)
    return check(args.jar, args.line, patches, args.cache)


if __name__ == "__main__":
    sys.exit(main())
