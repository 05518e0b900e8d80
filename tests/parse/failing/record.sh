#!/bin/bash
# Re-record tests/parse/failing/: real failing runs of real tools on tiny projects written under $FX (default
# /tmp/runner-failing), and for some the passing run of the same command after the fix (NAME.pass.log, the
# baseline). Needs gcc, make, go, cargo, javac/java, mvn (offline, ~/.m2), gradle (offline), node/npm, and
# jest, vitest and typescript installed with npm in $JS (default /tmp/fx/jsdeps). Run it from anywhere.
# After re-recording, read every NAME.excerpt.json against its log again: line numbers move.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
FX="${FX:-/tmp/runner-failing}"
JS="${JS:-/tmp/fx/jsdeps}"
PY="${PY:-$HERE/../../../.venv/bin/python}"
rm -rf "$FX" && mkdir -p "$FX"
# run NAME DIR CMD...: the command's stdout and stderr, interleaved as a step's log holds them
run() { name=$1; dir=$2; shift 2; (cd "$dir" && "$@") > "$HERE/$name.log" 2>&1; echo "$name: exit $?"; }

# ---- C: a make build with several files, one broken; make -k goes on with the others -------------------------
mkdir -p "$FX/c" && cd "$FX/c"
for n in $(seq 1 24); do
  printf '#include <stdio.h>\n#include "util.h"\nint part%s(int x) {\n    int unused;\n    return x * %s;\n}\n' "$n" "$n" > part$n.c
done
for n in $(seq 1 24); do printf 'int part%s(int);\n' $n; done > util.h && printf 'int scale(int x, int by);\n' >> util.h
cat > scale.c <<'EOF'
#include "util.h"
int scale(int x, int by) {
    int total = x * by
    return totl;
}
EOF
cat > main.c <<'EOF'
#include <stdio.h>
#include "util.h"
int main(void) {
    printf("%d\n", part1(1) + part8(2) + scale(3, 4));
    return 0;
}
EOF
cat > Makefile <<'EOF'
CFLAGS = -Wall -O2
OBJ = part1.o part2.o part3.o part4.o scale.o $(patsubst %,part%.o,5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24) main.o
app: $(OBJ)
	$(CC) -o $@ $(OBJ)
%.o: %.c util.h
	$(CC) $(CFLAGS) -c $<
clean:
	rm -f *.o app
EOF
run c_compile_error "$FX/c" make -k
printf '#include "util.h"\nint scale(int x, int by) {\n    int total = x * by;\n    return total;\n}\n' > scale.c
make clean >/dev/null
run c_compile_error.pass "$FX/c" make -k

# ---- C: the link fails (a function declared, never defined) ------------------------------------------------
mkdir -p "$FX/clink" && cd "$FX/clink"
printf 'int checksum(const char *s);\n#include <stdio.h>\nint main(void) { printf("%%d\\n", checksum("abc")); return 0; }\n' > main.c
printf '#include <string.h>\nsize_t span(const char *s) { return strlen(s); }\n' > util.c
run c_link_error "$FX/clink" sh -c 'set -x; gcc -c main.c && gcc -c util.c && gcc -o app main.o util.o'

# ---- C: a crash (segfault) after progress output ------------------------------------------------------------
mkdir -p "$FX/csegv" && cd "$FX/csegv"
cat > main.c <<'EOF'
#include <stdio.h>
#include <string.h>
struct rec { char name[16]; struct rec *next; };
int main(void) {
    struct rec *head = NULL;
    for (int i = 1; i <= 25; i++) printf("loading record %d of 25\n", i);
    fflush(stdout);
    printf("first record: %s\n", head->next->name);
    return 0;
}
EOF
gcc -O0 -o app main.c
run c_segfault "$FX/csegv" sh -c './app; echo "app exited with status $?"; exit 1'

# ---- Go: build errors, a panic with its goroutine trace, a failing test, go vet ---------------------------
mkdir -p "$FX/go/store" "$FX/go/cmd/app" && cd "$FX/go"
printf 'module example.com/shop\n\ngo 1.19\n' > go.mod
cat > store/store.go <<'EOF'
package store

import "fmt"

type Item struct {
	Name  string
	Price int
}

func Total(items []Item) int {
	sum := 0
	for _, it := range items {
		sum += it.Price
	}
	return sum
}

func Describe(it Item) string {
	return fmt.Sprintf("%s costs %d", it.Name, it.Price)
}

func Cheapest(items []Item) Item {
	best := items[0]
	for _, it := range items[1:] {
		if it.Price < best.Price {
			best = it
		}
	}
	return best
}
EOF
cat > store/store_test.go <<'EOF'
package store

import "testing"

func TestTotal(t *testing.T) {
	if got := Total([]Item{{"a", 2}, {"b", 3}}); got != 5 {
		t.Errorf("Total = %d, want 5", got)
	}
}

func TestDescribe(t *testing.T) {
	if got := Describe(Item{"pen", 2}); got != "pen costs 2" {
		t.Errorf("Describe = %q", got)
	}
}

func TestCheapest(t *testing.T) {
	cases := []struct {
		name  string
		items []Item
		want  string
	}{
		{"one", []Item{{"a", 1}}, "a"},
		{"two", []Item{{"a", 5}, {"b", 3}}, "b"},
		{"tie", []Item{{"a", 3}, {"b", 3}}, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Cheapest(c.items).Name; got != c.want {
				t.Errorf("Cheapest(%v) = %q, want %q", c.items, got, c.want)
			}
		})
	}
}
EOF
cat > cmd/app/main.go <<'EOF'
package main

import (
	"fmt"

	"example.com/shop/store"
)

func main() {
	items := []store.Item{{"pen", 2}, {"book", 12}}
	for i := 0; i <= len(items); i++ {
		fmt.Println(store.Describe(items[i]))
	}
}
EOF
run go_test_fail "$FX/go" go test ./...
cat > store/zz_more_test.go <<'EOF'
package store

import (
	"fmt"
	"testing"
)

func TestTotalMany(t *testing.T) {
	for n := 1; n <= 40; n++ {
		t.Run(fmt.Sprintf("items_%02d", n), func(t *testing.T) {
			items := make([]Item, n)
			for i := range items {
				items[i] = Item{fmt.Sprint(i), 2}
			}
			if got := Total(items); got != 2*n {
				t.Errorf("Total of %d items = %d, want %d", n, got, 2*n)
			}
		})
	}
}
EOF
run go_test_verbose "$FX/go" go test -v ./store
mv store/store_test.go store/store_test.go.off
run go_test_verbose.pass "$FX/go" go test -v ./store
mv store/store_test.go.off store/store_test.go
run go_panic "$FX/go" go run ./cmd/app
cat > cmd/app/main.go <<'EOF'
package main

import (
	"fmt"
	"os"

	"example.com/shop/store"
)

func main() {
	items := []store.Item{{"pen", 2}, {"book", 12}}
	total := store.Total(items)
	fmt.Println(store.Describ(items[0]))
	fmt.Printf("total: %d\n", totl)
}
EOF
run go_build_error "$FX/go" go build ./...
cat > cmd/app/main.go <<'EOF'
package main

import (
	"fmt"

	"example.com/shop/store"
)

func main() {
	items := []store.Item{{"pen", 2}, {"book", 12}}
	fmt.Printf("total: %s\n", store.Total(items))
	fmt.Println("items:", len(items), items)
}
EOF
run go_vet "$FX/go" go vet ./...

# ---- Rust: a compile error after warnings, a panic, a failing test ----------------------------------------
mkdir -p "$FX/rust/src" && cd "$FX/rust"
printf '[package]\nname = "ledger"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n' > Cargo.toml
cat > src/lib.rs <<'EOF'
pub struct Entry {
    pub account: String,
    pub cents: i64,
}

pub fn balance(entries: &[Entry], account: &str) -> i64 {
    entries.iter().filter(|e| e.account == account).map(|e| e.cents).sum()
}

pub fn parse_line(line: &str) -> Option<Entry> {
    let mut parts = line.split(',');
    let account = parts.next()?.trim().to_string();
    let cents = parts.next()?.trim().parse().ok()?;
    Some(Entry { account, cents })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_line() {
        let e = parse_line("cash, 250").unwrap();
        assert_eq!(e.cents, 250);
    }

    #[test]
    fn balance_sums_one_account() {
        let entries = vec![parse_line("cash,100").unwrap(), parse_line("bank,5").unwrap()];
        assert_eq!(balance(&entries, "cash"), 105, "only cash entries count");
    }

    #[test]
    fn rejects_garbage() {
        assert!(parse_line("nonsense").is_none());
    }
}
EOF
cat > src/main.rs <<'EOF'
use ledger::{balance, parse_line};

fn main() {
    let lines = ["cash,100", "bank,20", "cash,x"];
    let entries: Vec<_> = lines.iter().map(|l| parse_line(l).expect("every line parses")).collect();
    println!("cash: {}", balance(&entries, "cash"));
}
EOF
run rust_test_fail "$FX/rust" cargo test
run rust_panic "$FX/rust" cargo run -q
cat > src/main.rs <<'EOF'
use ledger::{balance, parse_line, Entry};

fn main() {
    let lines = ["cash,100", "bank,20"];
    let unused = 3;
    let entries: Vec<Entry> = lines.iter().filter_map(|l| parse_line(l)).collect();
    let total: i32 = balance(&entries, "cash");
    println!("cash: {}", total);
}
EOF
run rust_compile_error "$FX/rust" cargo build
sed -i 's/let total: i32 = /let total: i64 = /' src/main.rs
run rust_compile_error.pass "$FX/rust" cargo build

# ---- Java: javac errors, and a crash with a chained stack trace ----------------------------------------------
mkdir -p "$FX/java/src/app" && cd "$FX/java"
cat > src/app/Config.java <<'EOF'
package app;

import java.util.Map;

public class Config {
    private final Map<String, String> values;

    public Config(Map<String, String> values) {
        this.values = values;
    }

    public int port() {
        try {
            return Integer.parseInt(values.get("port"));
        } catch (NumberFormatException e) {
            throw new IllegalStateException("bad port in config: " + values.get("port"), e);
        }
    }
}
EOF
cat > src/app/Main.java <<'EOF'
package app;

import java.util.Map;

public class Main {
    public static void main(String[] args) {
        System.out.println("starting server");
        Config config = new Config(Map.of("host", "localhost", "port", "80a"));
        Server server = new Server(config.port());
        server.start();
    }
}
EOF
cat > src/app/Server.java <<'EOF'
package app;

public class Server {
    private final int port;

    public Server(int port) {
        this.port = port;
    }

    public void start() {
        System.out.println("listening on " + port);
    }
}
EOF
run java_crash "$FX/java" sh -c 'javac -d out src/app/*.java && java -cp out app.Main'
cat > src/app/Server.java <<'EOF'
package app;

import java.util.List;

public class Server {
    private final int port;

    public Server(int port) {
        this.port = port;
    }

    public void start() {
        List<String> routes = List.of("/", "/health");
        for (String r : routes) {
            System.out.println("route " + r);
        }
        String banner = port;
        log("listening on " + port);
    }
}
EOF
run java_compile_error "$FX/java" javac -d out src/app/Config.java src/app/Main.java src/app/Server.java

# ---- Maven: a failing JUnit 5 test (Surefire), and a dependency that cannot be resolved offline -------------
cp -r "$HERE/../fixtures/surefire" "$FX/maven" && cd "$FX/maven" && rm -rf target
run maven_test_fail "$FX/maven" mvn -o -B test -Dtest=FailingTest
sed 's#<artifactId>junit-jupiter</artifactId>#<artifactId>junit-jupiter</artifactId>#; s#</dependencies>#<dependency><groupId>com.google.guava</groupId><artifactId>guava</artifactId><version>33.9.9-jre</version></dependency></dependencies>#' pom.xml > pom-guava.xml
run maven_missing_dep "$FX/maven" mvn -o -B -f pom-guava.xml compile

# ---- Gradle: a failing JUnit 4 test --------------------------------------------------------------------------
cp -r "$HERE/../fixtures/gradle/calc" "$FX/gradle" && rm -rf "$FX/gradle/build" "$FX/gradle/.gradle"
run gradle_test_fail "$FX/gradle" gradle --no-daemon --offline --console=plain test

# ---- Python: pytest (-v, many tests, one failing), a crash with a chained traceback, pip, mypy, ruff ---------
mkdir -p "$FX/py/tests" "$FX/py/inventory" && cd "$FX/py"
printf '[pytest]\naddopts = -p no:cacheprovider\n' > pytest.ini
cat > inventory/__init__.py <<'EOF'
"""A tiny inventory."""


def restock(levels: dict[str, int], item: str, amount: int) -> dict[str, int]:
    out = dict(levels)
    out[item] = out.get(item, 0) + amount
    return out


def reserve(levels: dict[str, int], item: str, amount: int) -> dict[str, int]:
    if levels.get(item, 0) < amount:
        raise ValueError(f"not enough {item}")
    out = dict(levels)
    out[item] -= amount
    return out


def low_stock(levels: dict[str, int], threshold: int = 3) -> list[str]:
    return sorted(k for k, v in levels.items() if v < threshold)
EOF
cat > tests/test_inventory.py <<'EOF'
import pytest

from inventory import low_stock, reserve, restock


@pytest.mark.parametrize("n", range(30))
def test_restock_adds(n):
    assert restock({"pen": n}, "pen", 2) == {"pen": n + 2}


@pytest.mark.parametrize("n", range(3, 15))
def test_reserve_takes(n):
    assert reserve({"pen": n}, "pen", 3) == {"pen": n - 3}


def test_reserve_refuses_too_many():
    with pytest.raises(ValueError):
        reserve({"pen": 1}, "pen", 2)


def test_low_stock_includes_the_threshold():
    assert low_stock({"pen": 3, "ink": 1, "pad": 9}) == ["ink", "pen"]


@pytest.mark.parametrize("n", range(10))
def test_low_stock_is_sorted(n):
    levels = {f"item{i}": 0 for i in range(n)}
    assert low_stock(levels) == sorted(levels)
EOF
run pytest_fail "$FX/py" "$PY" -m pytest -v tests
cat > app.py <<'EOF'
import json
import sys

from inventory import reserve


def load(path):
    with open(path) as f:
        return json.load(f)


def main(path):
    print(f"loading {path}")
    try:
        levels = load(path)
    except FileNotFoundError as exc:
        raise RuntimeError(f"cannot start without stock levels: {path}") from exc
    print(reserve(levels, "pen", 1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "stock.json")
EOF
run python_crash "$FX/py" "$PY" app.py
mkdir -p "$FX/empty-index"
printf 'attrs>=22\nrequests==2.99.0\nurllib3<3\n' > requirements.txt
run pip_missing "$FX/py" "$PY" -m pip install --no-index --find-links "$FX/empty-index" -r requirements.txt
cat > inventory/report.py <<'EOF'
"""Stock reports."""

from inventory import low_stock


def summary(levels: dict[str, int]) -> str:
    low: list[str] = low_stock(levels)
    count: int = len(levels)
    return "%d items, low: %s" % (count, ", ".join(low))


def worst(levels: dict[str, int]) -> str:
    name = min(levels, key=levels.get)
    return levels[name]


def total(levels: dict[str, int]) -> int:
    return sum(levels.values()) + "0"
EOF
run mypy_errors "$FX/py" "$PY" -m mypy --strict inventory
cat > inventory/export.py <<'EOF'
"""Export stock as CSV."""
import os, sys
import json


def export(levels, path):
    f = open(path, "w")
    for k in levels.keys():
        f.write("%s,%d\n" % (k, levels[k]))
    l = len(levels)
    return l
EOF
run ruff_errors "$FX/py" "$PY" -m ruff check --no-cache --select E,F,W,SIM,UP,B inventory

# ---- Node: a crash, a missing module, npm offline, jest, vitest, tsc -------------------------------------------
mkdir -p "$FX/node/src" && cd "$FX/node"
printf '{"name":"orders","version":"1.0.0","private":true,"dependencies":{"left-pad":"^1.3.0"}}\n' > package.json
cat > src/orders.js <<'EOF'
function lineTotal(line) {
  return line.qty * line.product.price;
}

function orderTotal(order) {
  return order.lines.reduce((sum, line) => sum + lineTotal(line), 0);
}

module.exports = { lineTotal, orderTotal };
EOF
cat > src/main.js <<'EOF'
const { orderTotal } = require('./orders');

const orders = [
  { id: 1, lines: [{ qty: 2, product: { price: 5 } }] },
  { id: 2, lines: [{ qty: 1, product: null }] },
];
for (const o of orders) {
  console.log(`order ${o.id}: ${orderTotal(o)}`);
}
EOF
run node_crash "$FX/node" node src/main.js
printf "const pad = require('left-pad');\nconsole.log(pad('7', 3, '0'));\n" > src/pad.js
run node_missing_module "$FX/node" node src/pad.js
run npm_missing "$FX/node" npm install --offline --no-audit --no-fund
ln -s "$JS/node_modules" node_modules
cat > src/orders.test.js <<'EOF'
const { lineTotal, orderTotal } = require('./orders');

describe('orders', () => {
  test('a line is qty times price', () => {
    expect(lineTotal({ qty: 3, product: { price: 2 } })).toBe(6);
  });
  test('an order sums its lines', () => {
    const order = { lines: [{ qty: 1, product: { price: 4 } }, { qty: 2, product: { price: 1 } }] };
    expect(orderTotal(order)).toBe(7);
  });
  test('an empty order is free', () => {
    expect(orderTotal({ lines: [] })).toBe(0);
  });
});
EOF
run jest_fail "$FX/node" node_modules/.bin/jest --ci src
mkdir -p "$FX/vite/src" && cd "$FX/vite"
printf '{"name":"orders-esm","version":"1.0.0","private":true,"type":"module"}\n' > package.json
ln -s "$JS/node_modules" node_modules
cat > src/cart.js <<'EOF'
export function addItem(cart, item) {
  return { ...cart, items: [...cart.items, item] };
}

export function cartTotal(cart) {
  return cart.items.reduce((sum, item) => sum + item.price * item.qty, 0);
}
EOF
cat > src/cart.test.js <<'EOF'
import { describe, expect, test } from 'vitest';
import { addItem, cartTotal } from './cart.js';

describe('cart', () => {
  test('adding keeps the old items', () => {
    const cart = addItem({ items: [{ price: 1, qty: 1 }] }, { price: 2, qty: 1 });
    expect(cart.items).toHaveLength(2);
  });
  test('total counts quantities', () => {
    const cart = { items: [{ price: 3, qty: 2 }, { price: 1, qty: 1 }] };
    expect(cartTotal(cart)).toEqual(6);
  });
});
EOF
run vitest_fail "$FX/vite" node_modules/.bin/vitest run
mkdir -p "$FX/ts/src" && cd "$FX/ts"
ln -s "$JS/node_modules" node_modules
printf '{"compilerOptions":{"strict":true,"target":"es2020","module":"commonjs","noEmit":true},"include":["src"]}\n' > tsconfig.json
cat > src/money.ts <<'EOF'
export interface Money {
  cents: number;
  currency: string;
}

export function add(a: Money, b: Money): Money {
  if (a.currency !== b.currency) {
    throw new Error("currency mismatch");
  }
  return { cents: a.cents + b.cents, currency: a.currency };
}
EOF
cat > src/invoice.ts <<'EOF'
import { add, Money } from "./money";

export interface Line {
  label: string;
  price: Money;
}

export function invoiceTotal(lines: Line[]): Money {
  return lines.reduce((sum, l) => add(sum, l.price), { cents: 0, currency: "EUR" });
}

export function label(line: Line): string {
  return line.label + ": " + line.price.cents / 100;
}

export function firstPrice(lines: Line[]): number {
  return lines[0].price;
}

export const sample: Line = { label: "pen", price: { cents: "250", currency: "EUR" } };
EOF
run tsc_type_error "$FX/ts" node_modules/.bin/tsc -p . --pretty false

# ---- A deploy script no family knows: set -e stops on a missing file, a trap prints its cleanup ---------------
mkdir -p "$FX/deploy/build" && cd "$FX/deploy"
cat > deploy.sh <<'EOF'
#!/bin/bash
set -euo pipefail
cleanup() {
  echo "cleanup: removing staging directory /tmp/deploy-staging"
  rm -rf /tmp/deploy-staging
  echo "cleanup: releasing deploy lock"
  echo "cleanup: done"
}
trap cleanup EXIT
echo "deploy: version 1.4.2 to staging"
mkdir -p /tmp/deploy-staging
for f in index.html about.html style.css logo.svg; do
  echo "copying build/$f"
  cp "build/$f" /tmp/deploy-staging/ 2>/dev/null || echo "  (skipped: build/$f not built)"
done
echo "bundling assets"
for i in $(seq 1 12); do echo "  asset chunk $i/12 ok"; done
echo "copying the application bundle"
cp build/app.bundle.js /tmp/deploy-staging/
echo "deploy: finished"
EOF
chmod +x deploy.sh
run deploy_script "$FX/deploy" ./deploy.sh
touch build/app.bundle.js
run deploy_script.pass "$FX/deploy" ./deploy.sh

# ==== held out: recorded and pointed at after runner/excerpt.py was tuned on the logs above, never tuned on ====
# ---- C++: a template error from the standard library ----------------------------------------------------------
mkdir -p "$FX/cpp" && cd "$FX/cpp"
cat > main.cpp <<'CPP'
#include <map>
#include <string>
#include <vector>
#include <iostream>

struct Point { int x, y; };

int main() {
    std::map<Point, std::string> names;
    names[Point{1, 2}] = "a";
    std::vector<int> v{3, 1, 2};
    for (auto i : v) std::cout << i << "\n";
    return 0;
}
CPP
run heldout_cpp_template "$FX/cpp" g++ -std=c++17 -Wall -c main.cpp
# ---- Go: a test binary killed by its own -timeout ---------------------------------------------------------
mkdir -p "$FX/gohang/wait" && cd "$FX/gohang"
printf 'module example.com/hang\n\ngo 1.19\n' > go.mod
cat > wait/wait_test.go <<'GO'
package wait

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}

func TestWaitsForAnswer(t *testing.T) {
	answer := make(chan int)
	go func() { time.Sleep(time.Hour); answer <- 42 }()
	if got := <-answer; got != 42 {
		t.Fatalf("got %d", got)
	}
}
GO
run heldout_go_test_timeout "$FX/gohang" go test -v -timeout 2s ./...
# ---- pytest: a test module that cannot be imported ----------------------------------------------------------
mkdir -p "$FX/pycollect/tests" && cd "$FX/pycollect"
printf '[pytest]\naddopts = -p no:cacheprovider\n' > pytest.ini
printf 'def test_ok():\n    assert True\n' > tests/test_ok.py
printf 'from shop.pricing import discount\n\n\ndef test_discount():\n    assert discount(100, 0.1) == 90\n' > tests/test_pricing.py
mkdir -p shop && printf 'def rebate(price, rate):\n    return price * (1 - rate)\n' > shop/pricing.py && touch shop/__init__.py
run heldout_pytest_import_error "$FX/pycollect" "$PY" -m pytest tests
# ---- Maven: javac errors under the compiler plugin ------------------------------------------------------------
cp -r "$HERE/../fixtures/surefire" "$FX/mvncompile" && cd "$FX/mvncompile" && rm -rf target
printf 'package com.example;\n\npublic class Calc {\n    public static int add(int a, int b) { return a + b }\n    public static int div(int a, int b) { return a / b; }\n}\n' > src/main/java/com/example/Calc.java
run heldout_maven_compile_error "$FX/mvncompile" mvn -o -B test
# ---- make: a recipe calls a tool that is not installed --------------------------------------------------------
mkdir -p "$FX/gen" && cd "$FX/gen"
printf 'all: api.pb.go docs\n\napi.pb.go: api.proto\n\tprotoc --go_out=. api.proto\n\ndocs:\n\t@echo "docs: 12 pages"\n' > Makefile
printf 'syntax = "proto3";\n' > api.proto
run heldout_make_missing_tool "$FX/gen" make
# ---- Node: a syntax error in a module ---------------------------------------------------------------------------
mkdir -p "$FX/nodesyntax" && cd "$FX/nodesyntax"
printf "const config = require('./config');\nconsole.log(config.port);\n" > main.js
printf "module.exports = {\n  host: 'localhost',\n  port: 8080\n  debug: true,\n};\n" > config.js
run heldout_node_syntax_error "$FX/nodesyntax" node main.js
