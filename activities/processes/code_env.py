"""Environment variables that make a program load or run code its argv does not show.

``execute_command`` refuses these in a caller's ``env`` unless the deployment allows a name
(``process.allow_env``): one line in an environment (``LD_PRELOAD=/tmp/x.so``) turns an approved
``/usr/bin/ls`` into anything, and an approver rarely spots it. The set is every variable that a
whole class of programs honours (the dynamic loader and the C library, OpenSSL, the shells, the
common interpreters, git, and programs that run an editor or pager for you), not the options of one
program. Each family names why. Names are matched without regard to case: the loader and the
interpreters read the exact upper-case names, but an approver reads ``ld_preload`` as
``LD_PRELOAD`` and no command needs the lookalike.

Not refused, because ordinary commands need them: ``PATH``, ``HOME``, ``XDG_*``, ``TMPDIR``. They
can point a program at configuration or code in a directory an earlier call wrote; the approval
preview marks every variable the call gives.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class CodeFamily:
    """Variables refused for one reason; ``prefixes`` cover a whole namespace (``LD_``)."""

    what: str
    """Short, for messages: ``LD_PRELOAD (dynamic loader)``."""
    why: str
    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()


def _family(what: str, why: str, *names: str, prefixes: tuple[str, ...] = ()) -> CodeFamily:
    return CodeFamily(what=what, why=why, names=frozenset(names), prefixes=prefixes)


FAMILIES: tuple[CodeFamily, ...] = (
    _family(
        "dynamic loader",
        "the loader preloads, audits or searches libraries they name (every LD_* glibc and musl "
        "honour, macOS dyld's DYLD_*); GLIBC_TUNABLES is parsed by the loader itself",
        "GLIBC_TUNABLES",
        prefixes=("LD_", "DYLD_"),
    ),
    _family(
        "C library",
        "iconv loads the shared objects in GCONV_PATH, getconf runs programs from GETCONF_DIR, "
        "MALLOC_TRACE writes the file it names and the other MALLOC_* change how memory errors "
        "behave",
        "GCONV_PATH",
        "GETCONF_DIR",
        prefixes=("MALLOC_",),
    ),
    _family(
        "OpenSSL",
        "the configuration, engines and providers libcrypto loads as shared objects in nearly "
        "every program that speaks TLS",
        "OPENSSL_CONF",
        "OPENSSL_ENGINES",
        "OPENSSL_MODULES",
    ),
    _family(
        "shell",
        "a shell runs BASH_ENV, ENV and ZDOTDIR's files at start-up, imports BASH_FUNC_* as "
        "functions that replace commands, and expands PS0-PS4 and PROMPT_COMMAND with command "
        "substitution (PS4 in any script that uses set -x, which SHELLOPTS/BASHOPTS can turn on); "
        "old shells split command lines on IFS",
        "BASH_ENV",
        "ENV",
        "ZDOTDIR",
        "SHELLOPTS",
        "BASHOPTS",
        "PS0",
        "PS1",
        "PS2",
        "PS4",
        "PROMPT_COMMAND",
        "IFS",
        prefixes=("BASH_FUNC_",),
    ),
    _family(
        "python",
        "module search paths (PYTHONPATH, PYTHONHOME, PYTHONUSERBASE with its .pth files, "
        "PYTHONPLATLIBDIR), start-up code (PYTHONSTARTUP), bytecode read from another tree "
        "(PYTHONPYCACHEPREFIX), and modules imported by name (PYTHONWARNINGS categories, "
        "PYTHONBREAKPOINT)",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONUSERBASE",
        "PYTHONPLATLIBDIR",
        "PYTHONPYCACHEPREFIX",
        "PYTHONWARNINGS",
        "PYTHONBREAKPOINT",
    ),
    _family(
        "perl",
        "command-line options (-M loads a module), library paths and debugger code",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "PERL5DB",
    ),
    _family(
        "ruby",
        "command-line options (-r requires a file) and library and script paths",
        "RUBYOPT",
        "RUBYLIB",
        "RUBYPATH",
    ),
    _family(
        "node",
        "command-line options (--require, --import) and module paths",
        "NODE_OPTIONS",
        "NODE_PATH",
        "NODE_REPL_EXTERNAL_MODULE",
    ),
    _family(
        "java",
        "options every JVM reads (-javaagent loads code) and the class path",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "CLASSPATH",
    ),
    _family(
        "interpreter",
        "start-up code and module paths of Lua (LUA_INIT runs code), PHP (php.ini's "
        "auto_prepend_file), Tcl, R and .NET (startup hooks, profilers)",
        "PHPRC",
        "PHP_INI_SCAN_DIR",
        "TCLLIBPATH",
        "R_PROFILE",
        "R_PROFILE_USER",
        "DOTNET_STARTUP_HOOKS",
        prefixes=("LUA_INIT", "LUA_PATH", "LUA_CPATH", "CORECLR_PROFILER"),
    ),
    _family(
        "git",
        "configuration (GIT_CONFIG_* sets any key, core.fsmonitor and aliases run commands), "
        "where git finds its own programs and templates (hooks), and commands it runs",
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_PROXY_COMMAND",
        "GIT_ASKPASS",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_PAGER",
        "GIT_EXTERNAL_DIFF",
        prefixes=("GIT_CONFIG",),
    ),
    _family(
        "runs a program",
        "a command other programs run for you (git commit runs the editor, less runs LESSOPEN, "
        "Python's webbrowser runs BROWSER); pagers are never needed here, since output is a pipe",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "MANPAGER",
        "BROWSER",
        "LESSOPEN",
        "LESSCLOSE",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
    ),
)


def loads_code(name: str) -> str | None:
    """Why ``name`` makes programs load or run code (its family's ``what``), or ``None``."""
    upper = name.upper()
    for family in FAMILIES:
        if upper in family.names or upper.startswith(family.prefixes):
            return family.what
    return None


def refused_env(names: Iterable[str], allowed: Collection[str]) -> list[str]:
    """``NAME (why)`` for each of ``names`` that loads code and is not in ``allowed`` exactly."""
    return [
        f"{name} ({what})"
        for name in names
        if name not in allowed and (what := loads_code(name)) is not None
    ]


def refusal(refused: Collection[str]) -> str:
    """What a model reads when its ``env`` holds ``refused`` (from ``refused_env``)."""
    them = "it" if len(refused) == 1 else "them"
    return (
        f"{', '.join(refused)}: refused: such variables make programs load or run code that argv "
        f"does not show; remove {them} (a deployment can allow names in process.allow_env)"
    )
