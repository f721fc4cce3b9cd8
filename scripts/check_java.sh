#!/usr/bin/env bash
# Check that a Java runtime >= 17 is available (PySpark 4.x needs it).
# Looks at $JAVA_HOME/bin/java first (PySpark does the same), then `java` on PATH.
# Exits 0 and prints the version when fine; prints what is wrong and how to fix it, and
# exits 1, otherwise.
set -euo pipefail

readonly REQUIRED=17

fail() {
    {
        echo "error: $1"
        echo "wisp runs on Spark 4.x, which needs Java ${REQUIRED} or newer."
        echo "On Debian/Ubuntu install it with:"
        echo "    sudo apt-get install -y openjdk-${REQUIRED}-jre-headless"
        echo "or point JAVA_HOME at a Java ${REQUIRED}+ installation."
    } >&2
    exit 1
}

if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
    java_bin="${JAVA_HOME}/bin/java"
elif java_bin="$(command -v java 2>/dev/null)"; then
    :
else
    fail "no Java found (JAVA_HOME is ${JAVA_HOME:-unset} and there is no \`java\` on PATH)."
fi

# `java -version` writes to stderr, e.g.
#   openjdk version "17.0.15" 2025-04-15     (Java 9+: major is the first number)
#   java version "1.8.0_392"                 (Java <= 8: major is the second number)
version_output="$("$java_bin" -version 2>&1 || true)"
version="$(printf '%s\n' "$version_output" | sed -n 's/.*version "\([^"]*\)".*/\1/p;T;q')"
if [[ -z "$version" ]]; then
    fail "could not read a version from \`$java_bin -version\` (output: ${version_output:-nothing})."
fi

if [[ "$version" == 1.* ]]; then
    major="$(cut -d. -f2 <<<"$version")"
else
    major="${version%%[.+_-]*}"
fi
if ! [[ "$major" =~ ^[0-9]+$ ]]; then
    fail "could not parse the Java major version from \"$version\" ($java_bin)."
fi

if (( major < REQUIRED )); then
    fail "Java ${major} found at $java_bin (version \"$version\"), but Java ${REQUIRED}+ is required."
fi

echo "Java ${major} OK ($java_bin, version \"$version\")"
