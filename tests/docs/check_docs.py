#!/usr/bin/env python3
"""Docs that compile as printed.

Reads README.md and docs/*.md (or the files given), and for every fenced
block in C, C++ or shell:

  c                  compiled with -Wall -Wextra -Werror against build/include
                     and build/libconvcache.so, then run;
  cpp, c++           the same with -std=c++17;
  sh, bash, shell    run with bash -e -o pipefail, in the document's own
                     temporary directory, with a fresh HOME and TMPDIR, no
                     CONVCACHE_*, LD_PRELOAD, PKG_CONFIG_PATH or TORCH_*
                     variables, and convcache installed as a reader has it
                     after "make install" into a temporary prefix: its bin/
                     first on PATH (then build/), its pkg-config file found;
                     a block that needs the wheel runs as a wheel user has
                     it instead: the wheel (--wheel) pip-installed into a
                     fresh venv, whose bin/ alone is added to PATH, with no
                     PKG_CONFIG_PATH.

Shell blocks of a document run in order in one directory, so a later block
can build a file an earlier one wrote (a C or C++ block runs in a directory
of its own). Blocks in other languages (text, diff,
cmake, python) are listed as not checked. One or more directives, each an
HTML comment on the lines just above the fence, change what is done:

  <!-- docs-test: fragment WHY -->    part of a program, not checked
  <!-- docs-test: skip WHY -->        not run, for the reason given
  <!-- docs-test: needs NEED WHY -->  run only where NEED is met: gpu,
                                      network and root never are here;
                                      torch (python3 imports it),
                                      convcache-config (`convcache config
                                      --cflags` works), wheel (--wheel
                                      names a wheel: the block runs
                                      against it, as above)
  <!-- docs-test: compile-only WHY -->  C/C++: built, not run
  <!-- docs-test: file NAME -->       also written to NAME in the directory
  <!-- docs-test: expect TEXT -->     the output must contain TEXT

It also checks what a front page promises: README.md at most 400 lines,
`pip install` and `convcache run` in its first 120, and an `apt-get
install` line naming every package that make test's prerequisite check
(tests/infra/prereqs.sh, its build, cxx and test sets) can ask for; no
document names a work item ("issue 12"); every relative link leads to a
file, and every #anchor to a heading, that exists.

usage: check_docs.py [--make MAKE] [--wheel WHEEL] [FILE.md...]   (from the
       source tree; make docs-test runs it). Exit 0 when every check passed.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

C_LANGS = {"c": "c", "cpp": "c++", "c++": "c++", "cxx": "c++"}
SHELL_LANGS = {"sh", "bash", "shell"}
NEEDS = ("gpu", "network", "root", "torch", "convcache-config", "wheel")
DIRECTIVES = ("fragment", "skip", "needs", "compile-only", "file", "expect")
DIRECTIVE_RE = re.compile(r"^\s*<!--\s*docs-test:\s*(\S+)\s*(.*?)\s*-->\s*$")
FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
README_MAX_LINES = 400
README_FIRST = 120


class Block:
    def __init__(self, doc, line, lang, text, directives):
        self.doc, self.line, self.lang, self.text = doc, line, lang, text
        self.directives = directives  # [(name, argument)]

    def where(self):
        return "%s:%d" % (self.doc, self.line)

    def get(self, name):
        return [arg for n, arg in self.directives if n == name]


def parse(doc, problems):
    """The fenced blocks of doc, each with the directives just above it."""
    lines = open(doc, encoding="utf-8").read().split("\n")
    blocks, pending = [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = DIRECTIVE_RE.match(line)
        if m:
            if m.group(1) not in DIRECTIVES:
                problems.append("%s:%d: unknown docs-test directive %r (known: %s)"
                                % (doc, i + 1, m.group(1), ", ".join(DIRECTIVES)))
            pending.append((m.group(1), m.group(2)))
            i += 1
            continue
        m = FENCE_RE.match(line)
        if not m:
            if line.strip() and pending:
                problems.append("%s:%d: a docs-test directive is not followed by a code block" % (doc, i))
            pending = [] if line.strip() else pending
            i += 1
            continue
        indent, fence, lang = len(m.group(1)), m.group(2), m.group(3).lower()
        start, body = i + 1, []
        i += 1
        while i < len(lines):
            stripped = lines[i].strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
                break
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i].lstrip())
            i += 1
        else:
            problems.append("%s:%d: a code block is never closed" % (doc, start))
        blocks.append(Block(doc, start, lang, "\n".join(body) + "\n", pending))
        pending = []
        i += 1
    return blocks


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower()
    s = re.sub(r"[`*_]", "", s)
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(doc):
    """The anchors of doc's headings; a repeated one gets -1, -2, as GitHub does."""
    out, seen, in_fence = set(), {}, False
    for line in open(doc, encoding="utf-8"):
        if FENCE_RE.match(line):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            a = slug(line.lstrip("#"))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else "%s-%d" % (a, n))
    return out


def prereq_packages():
    """The packages tests/infra/prereqs.sh can ask for in make test's sets
    (build, cxx, test): the last word of its `tool` lines, the first of its
    `need` calls."""
    sets, pkgs, arm = ("build", "cxx", "test"), [], None
    for line in open("tests/infra/prereqs.sh", encoding="utf-8"):
        s = line.strip()
        m = re.match(r"^([a-z0-9-]+)\)$", s)
        if m:
            arm = m.group(1)
            continue
        if s == ";;":
            arm = None
        if arm not in sets:
            continue
        m = re.match(r'^tool\s+\S+\s+([a-z0-9.+-]+)', s) or re.search(r'\bneed\s+([a-z0-9.+-]+)\s', s)
        if m and m.group(1) not in pkgs:
            pkgs.append(m.group(1))
    return pkgs


def check_text(docs, problems):
    """The front page's limits, work-item numbers, and relative links."""
    if "README.md" in docs:
        lines = open("README.md", encoding="utf-8").read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) > README_MAX_LINES:
            problems.append("README.md: %d lines, more than %d" % (len(lines), README_MAX_LINES))
        first = "\n".join(lines[:README_FIRST])
        for want in ("pip install", "convcache run"):
            if want not in first:
                problems.append("README.md: %r is not in its first %d lines" % (want, README_FIRST))
        apt = [l for l in lines if "apt-get install" in l]
        missing = [p for p in prereq_packages() if not any(re.search(r"(^|\s)%s(\s|$)" % re.escape(p), l) for l in apt)]
        if missing:
            problems.append("README.md: no apt-get install line names %s, which make test needs (tests/infra/prereqs.sh)"
                            % ", ".join(missing))
    for doc in docs:
        text = open(doc, encoding="utf-8").read()
        for n, line in enumerate(text.split("\n"), 1):
            for m in re.finditer(r"\b(issue|work item)s?\s+#?\d+", line, re.I):
                problems.append("%s:%d: names a work item (%r)" % (doc, n, m.group(0)))
            for m in re.finditer(r"\]\(([^)\s]+)\)", line):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, frag = target.partition("#")
                full = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
                if not os.path.exists(full):
                    problems.append("%s:%d: link to %s: no such file" % (doc, n, target))
                elif frag and full.endswith(".md") and frag not in anchors(full):
                    problems.append("%s:%d: link to %s: no heading with that anchor" % (doc, n, target))


class Runner:
    def __init__(self, root, make, work, wheel):
        self.root, self.make, self.work, self.wheel = root, make, work, wheel
        self.build = os.path.join(root, "build")
        self.prefix = None
        self.venv = None
        self.met = {}

    def env(self, home, tmp, wheel=False):
        env = {k: v for k, v in os.environ.items()
               if not (k.startswith(("CONVCACHE_", "TORCH_", "XDG_", "VIRTUAL_ENV", "PYTHON"))
                       or k in ("LD_PRELOAD", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH", "CDPATH", "BASH_ENV", "ENV"))}
        env.update(HOME=home, TMPDIR=tmp)
        if wheel:  # a wheel user: the venv's bin/, no build/, no prefix
            path = [os.path.join(self.venv, "bin")]
        else:
            path = [self.build]
            if self.prefix:
                path.insert(0, os.path.join(self.prefix, "bin"))
                env["PKG_CONFIG_PATH"] = os.path.join(self.prefix, "lib", "pkgconfig")
        env["PATH"] = os.pathsep.join(path + [env.get("PATH", "/usr/bin:/bin")])
        return env

    def install_wheel(self):
        """pip install of the wheel into a fresh venv, once, for the blocks
        that need it (no network: --no-index, and no dependencies)."""
        if self.venv:
            return None
        if not self.wheel or not os.path.isfile(self.wheel):
            return "--wheel %s: no such wheel (make docs-test builds it)" % self.wheel
        venv = os.path.join(self.work, "wheel-venv")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "PYTHON"))}
        env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_ROOT_USER_ACTION="ignore", PIP_NO_INDEX="1")
        for cmd in (["python3", "-m", "venv", venv],
                    [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--quiet", "--no-index",
                     "--no-deps", self.wheel]):
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                return "%s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr)
        self.venv = venv
        return None

    def install(self):
        """make install into a temporary prefix, once, for the shell blocks."""
        if self.prefix:
            return None
        prefix = os.path.join(self.work, "prefix")
        r = subprocess.run(self.make + ["--no-print-directory", "-s", "install", "PREFIX=" + prefix],
                           cwd=self.root, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            return "make install PREFIX=%s failed:\n%s%s" % (prefix, r.stdout, r.stderr)
        self.prefix = prefix
        return None

    def need_met(self, need, home, tmp):
        """Why need is not met here, or None."""
        if need in ("gpu", "network", "root"):
            return {"gpu": "needs a GPU", "network": "needs the network",
                    "root": "needs root"}[need]
        if need == "wheel":
            return None if self.wheel else "needs the wheel (--wheel; make docs-test gives it)"
        if need not in self.met:
            if need == "torch":
                cmd = ["python3", "-c", "import torch"]
            else:  # convcache-config
                cmd = ["convcache", "config", "--cflags"]
            try:
                ok = subprocess.run(cmd, env=self.env(home, tmp), capture_output=True,
                                    timeout=60).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            self.met[need] = ok
        if self.met[need]:
            return None
        return {"torch": "needs PyTorch (python3 cannot import torch here)",
                "convcache-config": "needs `convcache config` (not in this build)"}[need]

    def run(self, b, docdir, home, tmp):
        """(status, detail): status is ok, skipped or FAILED."""
        for why in b.get("fragment"):
            return "skipped", "fragment" + (": " + why if why else "")
        for why in b.get("skip"):
            return "skipped", why or "skip"
        for arg in b.get("needs"):
            need, _, why = arg.partition(" ")
            if need not in NEEDS:
                return "FAILED", "unknown need %r (known: %s)" % (need, ", ".join(NEEDS))
            unmet = self.need_met(need, home, tmp)
            if unmet:
                return "skipped", unmet + (": " + why if why else "")
        for name in b.get("file"):
            with open(os.path.join(docdir, name), "w") as f:
                f.write(b.text)
        wheel = any(arg.split(" ")[0] == "wheel" for arg in b.get("needs"))
        if b.lang in C_LANGS:
            status, detail, out = self.run_c(b, docdir, home, tmp)
        else:
            err = self.install_wheel() if wheel else self.install()
            if err:
                return "FAILED", err
            status, detail, out = self.run_shell(b, docdir, home, tmp, wheel)
        if status == "ok":
            for want in b.get("expect"):
                if want not in out:
                    return "FAILED", "its output lacks %r:\n%s" % (want, out)
        return status, detail if status == "ok" else detail + "\n" + out

    def run_c(self, b, docdir, home, tmp):
        # A program runs in a directory and HOME of its own, so that what it
        # writes there (a cache file) is not what a later shell block finds.
        docdir = os.path.join(docdir, "block%d" % b.line)
        home = os.path.join(docdir, "home")
        os.makedirs(home)
        ext = "c" if C_LANGS[b.lang] == "c" else "cpp"
        src = os.path.join(docdir, "block.%s" % ext)
        exe = os.path.join(docdir, "block")
        with open(src, "w") as f:
            f.write(b.text)
        compiler = [os.environ.get("CC", "cc")] if ext == "c" else [os.environ.get("CXX", "c++"), "-std=c++17"]
        cmd = compiler + ["-Wall", "-Wextra", "-Werror", "-I", os.path.join(self.build, "include"),
                          "-o", exe, src, "-L", self.build, "-lconvcache",
                          "-Wl,-rpath," + self.build, "-lpthread", "-ldl"]
        r = subprocess.run(cmd, cwd=docdir, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            return "FAILED", "does not compile (%s)" % " ".join(compiler), r.stdout + r.stderr
        if b.get("compile-only"):
            return "ok", "built, not run: " + b.get("compile-only")[0], ""
        return self.execute([exe], docdir, home, tmp, "built and ran")

    def run_shell(self, b, docdir, home, tmp, wheel=False):
        script = os.path.join(docdir, "block%d.sh" % b.line)
        with open(script, "w") as f:
            f.write(b.text)
        return self.execute(["bash", "-e", "-o", "pipefail", script], docdir, home, tmp,
                            "ran against the wheel" if wheel else "ran", wheel)

    def execute(self, cmd, cwd, home, tmp, done, wheel=False):
        try:
            r = subprocess.run(cmd, cwd=cwd, env=self.env(home, tmp, wheel), capture_output=True,
                               text=True, timeout=120, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            return "FAILED", "ran past 120 s", out.decode(errors="replace") if isinstance(out, bytes) else out
        out = r.stdout + r.stderr
        if r.returncode != 0:
            return "FAILED", "exit status %d" % r.returncode, out
        return "ok", done, out


def main():
    ap = argparse.ArgumentParser(description="Build and run the code blocks of the docs.")
    ap.add_argument("--make", default="make", help="the make command (make docs-test passes $(MAKE))")
    ap.add_argument("--wheel", default="", help="the wheel the blocks for wheel users run against")
    ap.add_argument("docs", nargs="*", help="Markdown files (default: README.md docs/*.md)")
    args = ap.parse_args()
    root = os.getcwd()
    if not os.path.exists(os.path.join(root, "build", "libconvcache.so")):
        sys.exit("check_docs: build/libconvcache.so is missing: run make first (make docs-test does)")
    docs = args.docs or ["README.md"] + sorted(glob.glob("docs/*.md"))

    problems = []
    check_text(docs, problems)
    work = tempfile.mkdtemp(prefix="convcache-docs.")
    counts = {"ok": 0, "skipped": 0, "FAILED": 0}
    other = {}
    try:
        runner = Runner(root, args.make.split(), work, args.wheel)
        for n, doc in enumerate(docs):
            docdir = os.path.join(work, "doc%d" % n)
            home, tmp = os.path.join(docdir, "home"), os.path.join(docdir, "tmp")
            for d in (docdir, home, tmp):
                os.makedirs(d)
            for b in parse(doc, problems):
                if b.lang not in C_LANGS and b.lang not in SHELL_LANGS:
                    other[b.lang or "(none)"] = other.get(b.lang or "(none)", 0) + 1
                    if b.directives:
                        problems.append("%s: docs-test directives on a %s block, which is not checked"
                                        % (b.where(), b.lang or "plain"))
                    continue
                status, detail = runner.run(b, docdir, home, tmp)
                counts[status] += 1
                print("docs-test: %-24s %-5s %s: %s" % (b.where(), b.lang, status, detail.rstrip()), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for p in problems:
        print("docs-test: FAILED %s" % p)
    print("docs-test: %d C, C++ and shell blocks: %d built or ran, %d skipped, %d failed; not checked: %s"
          % (sum(counts.values()), counts["ok"], counts["skipped"], counts["FAILED"],
             ", ".join("%d %s" % (v, k) for k, v in sorted(other.items())) or "none"))
    if counts["FAILED"] or problems:
        print("docs-test: FAILED (%d blocks, %d other problems)" % (counts["FAILED"], len(problems)))
        sys.exit(1)
    print("docs-test: ok")


main()
