"""The real projects the real-world suite runs: pinned sdists from PyPI.

Nothing of these projects is copied into this repository: each sdist is downloaded at
test time by name, version and sha256 (PyPI's own digest) and cached
(``$PATCHWARDEN_TEST_CACHE``, default ``~/.cache/patchwarden-tests``). The repository
built from it leaves out what an sdist has and a git checkout has not (``PKG-INFO``,
``*.egg-info``, the version file setuptools-scm or hatch-vcs writes), so setup must
do what it does on the real repository.

Each project names a module for the injected unused import, and one edit that breaks
its behaviour (a test of its own fails), for the culprit finder.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Project:
    name: str  # the distribution's name on PyPI
    version: str
    sha256: str  # of the sdist, as PyPI publishes it
    layout: str  # what this project stands for in the suite
    drop: tuple[str, ...]  # sdist-only files a git checkout does not have
    lint_file: str = ""  # where the unused import is injected (the fixers' suite)
    # (file, text, replacement): a behaviour-breaking edit (the culprit finder's suite)
    breaks: tuple[str, str, str] = ("", "", "")
    config: str = ""  # a .github/patchwarden.yml its maintainers would write, if any

    @property
    def id(self) -> str:
        return f"{self.name}-{self.version}"


PROJECTS = (
    Project(
        name="iniconfig",
        version="2.3.0",
        sha256="c76315c77db068650d49c5b56314774a7804df16fee4402c1f19d6d15d8c4730",
        layout="src layout, setuptools-scm version file, PEP 735 dependency group",
        drop=("PKG-INFO", "src/iniconfig/_version.py", "src/iniconfig.egg-info"),
        lint_file="src/iniconfig/exceptions.py",
        breaks=(
            "src/iniconfig/_parse.py",
            "return c in COMMENTCHARS",
            "return c in COMMENTCHARS[:1]",
        ),
    ),
    Project(
        name="humanize",
        version="4.14.0",
        sha256="2fa092705ea640d605c435b1ca82b2866a1b601cdf96f076d70b79a855eba90d",
        layout="src layout, hatch-vcs version file, test extra (freezegun)",
        drop=("PKG-INFO", "src/humanize/_version.py"),
        lint_file="src/humanize/filesize.py",
        breaks=("src/humanize/filesize.py", '" kB",', '" KB",'),
    ),
    Project(
        name="six",
        version="1.17.0",
        sha256="ff70335d468e7eb6ec65b95b99d3a2836546063f63acc5171de367e834932a81",
        layout="setup.py only, one flat module",
        drop=("PKG-INFO", "six.egg-info"),
        lint_file="six.py",
        breaks=("six.py", 'return s.encode("latin-1")', 'return s.encode("utf-8")'),
    ),
    Project(
        name="toolz",
        version="1.0.0",
        sha256="2c86e3d9a04798ac556793bced838816296a2f085017664e4995cb40a1047a02",
        layout="setup.py with versioneer, flat package with its tests inside",
        drop=("PKG-INFO", "toolz.egg-info"),
        lint_file="toolz/utils.py",
        # second() returns the first element. (An earlier break, first() as
        # list(seq)[-1], made every bad probe fill memory for 10 s on an endless iterator.)
        breaks=(
            "toolz/itertoolz.py",
            "    next(seq)\n    return next(seq)\n",
            "    return next(seq)\n",
        ),
    ),
    Project(
        name="python_dateutil",
        version="2.9.0.post0",
        sha256="37dd54208da7e1cd875388217d5e00ebd4179249f90fb72437e91a35459a0ad3",
        layout="setup.cfg + setuptools_scm (use_scm_version), src layout, requirements-dev.txt",
        drop=("PKG-INFO", "src/dateutil/_version.py", "src/python_dateutil.egg-info"),
        lint_file="src/dateutil/easter.py",
        breaks=("src/dateutil/easter.py", "EASTER_WESTERN = 3", "EASTER_WESTERN = 2"),
        # Its tests predate pytest 9 (a removal warning, turned into an error, stops
        # collection): detected setup says "the test environment is broken", so its
        # maintainers pin pytest, with the plain `pip` of the docs.
        config="setup: pip install --quiet -e . -r requirements-dev.txt 'pytest<9'\n",
    ),
    Project(
        name="cachetools",
        version="5.5.2",
        sha256="1a661caa9175d26759571b2e19580f9d6393969e5dfca11fdb1f947a23e640d4",
        layout="setup.cfg, src layout, no test extra (pytest added)",
        drop=("PKG-INFO", "src/cachetools.egg-info"),
        lint_file="src/cachetools/keys.py",
        breaks=(
            "src/cachetools/__init__.py",
            "key = next(iter(self.__order))",
            "key = next(reversed(self.__order))",
        ),
    ),
)
