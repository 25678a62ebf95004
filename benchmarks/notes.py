"""The page's fixed text: what changed in the engine behind the numbers, and how the write path was profiled."""

PROFILE_NOTES = """## Write-path profile (issue 15)

What a `__manifest` write costs now, profiled on local disk (cProfile, 200 DeclareTable on 300 + 300 tables,
ms per write of CPU; shares are what matters):

1. **Guarded append** (`namespace/fragments.py`) — the rows go into one new data file (pylance
   `write_fragments`, ~2.6 ms: its fixed cost, not the one row) and are committed as a Lance *Merge* of every
   fragment plus the new one with no retries (~2.2 ms): any concurrent commit fails it, so a duplicate id
   checked against that version in memory cannot slip in. A pylance `merge_insert` joined the new ids against
   the whole table instead: 6-10 ms.
2. **Marker and directory** of a declared table — `.lance-reserved` (~0.75 ms) and `mkdir` (~0.8 ms).
3. **Compaction** every 8th version with more than 4 fragments, as one copy-on-write rewrite of every row in
   the writers' turn (~6-10 ms, ~1 ms per write amortised, not in the p50). A Lance *Rewrite*
   (`compact_files`) reads for longer and lost every race with guarded appends of a busy writer.
4. **Snapshot refresh** after another writer's commit reads only the fragments added since (their keys:
   data file UUIDs and deletion file ids), not the whole table.
5. **pylance's `DataFile.path`** defines a class on every call (~50 µs): fragment keys are computed only when
   a snapshot is refreshed from another version, never on the own-commit path.

Reproduce: `python -m cProfile -s tottime` over a loop of DeclareTable on a catalog from
`benchmarks/catalog.py` (`catalog.build(root, 300)`)."""

ENGINE_NOTES = """## Engine changes behind these numbers (issue 15)

- **Guarded appends** (`namespace/fragments.py`): an insert into `__manifest` is checked against the version it
  commits on top of (in memory) and committed as a Lance *Merge* of every fragment plus one new data file,
  with no retries, so any concurrent commit fails it instead of being rebased over: ~4 ms where a pylance
  merge-insert (which joins the new ids against the whole table) took 6-10 ms. After 3 lost attempts an
  insert turns to a merge-insert, which pylance rebases over other writers' inserts of other ids (without
  that, 8 writer processes starved one writer past 20 retries).
- **Compaction as a copy-on-write rewrite** (`maintenance.compact`), taken in the writers' turn with at most 2
  retries: a Lance *Rewrite* conflicts with every guarded append and lost every race against a busy writer.
  The insert whose commit would be followed by a whole rewrite is that rewrite (`maintenance.rewrite_due`):
  one Overwrite, not an append and then a rewrite (mean declare, one thread: 2.5 -> 2.2 ms).
- **Writers of one instance take turns** (`ManifestTable._turn`, bounded wait): threads never conflict with each
  other, and a thread that waited commits on the snapshot the previous one published.
- **Incremental refresh** (`Snapshot.table`): a version that only added fragments to the cached one is read by
  reading the added fragments only.
- **Rows cache of remote catalogs** (`rows_store.py`, local tier; property `manifest_cache_dir`): a new process
  finds the rows of the newest manifest file (named, with its e-tag, by the freshness LIST) that an earlier
  process of the machine read: a reschedule-mode poke costs what a warm one does.
- **Spark**: staging jobs run with `spark.sql.execution.arrow.maxBytesPerBatch` at `Int.MaxValue` (Spark 4
  then skips a size check after every row), set and restored around the jobs.

## Engine changes behind these numbers (issue 7)

Profiled with cProfile before each change; every change keeps the answers identical and every call still
sees the latest `__manifest` version (a commit by another process is visible to the next call).

- **One scan per manifest version** (`ManifestTable._rows`): reads load the four columns of the latest
  version once and filter them in memory with `pyarrow.compute` (point lookups, `IN` lists, prefix listings);
  the table is loaded again only when `checkout_latest()` reports a new version. A full scan of the four
  columns costs less than a filtered Lance scan (which reads the same columns and evaluates SQL), so even a
  write-heavy caller pays no more than before. Listings project only `object_id` (`child_ids`) instead of
  building a row object (with JSON parsing) per child.
- **One freshness check per operation** (`ManifestTable.operation()`, entered by the `_operation` wrapper):
  the latest version was checked out up to three times per call (rows, the `_managed()` metadata check, the
  write path); now once, and again only after a failed write.
- **Freshness by the next manifest** (`ManifestTable._refresh`): Lance creates manifest N+1 atomically, so
  "no `_versions/` file for N+1" proves N is still the latest: one request (`Storage.file_exists`: a 1-byte GET
  on S3, s3fs's `exists` would add a LIST; one `stat` locally), the same at any number of versions, where
  `checkout_latest()` listed all of `_versions/` (11,481 files after 10,000 writes: ~5 ms per call locally).
  The shortcut is trusted only within `maintenance.REVALIDATE_AFTER` (2 min) of the last time N was seen as
  the latest, and clean-up refuses shorter windows, so a cleaned-up N+1 can never hide a newer version.
- **Own commits move the cache** (`ManifestTable._after_write`): when a commit is exactly the next version
  after the cached rows, the cache applies the inserted/replaced rows instead of scanning again.
- **Root listing in compatibility mode**: one names-only listing of the root (`Storage.list_names`, no
  `stat` per entry) and no per-table `.lance-deregistered` check for tables the manifest already lists.
- **Root TableExists**: the `<name>.lance` listing answers first (existence is "row or directory" either way).
- **DeclareTable**: one listing of the new location instead of `exists` + listing.
- **`__manifest` maintenance** (`namespace/maintenance.py`): compaction every 8th version when there are
  more than 4 fragments, clean-up of versions superseded more than 10 minutes ago every 256th version;
  `maintain_manifest(namespace)` on demand. Without it, every read and every merge-insert scans one more
  fragment per write (two requests each), and `checkout_latest` lists one more version file per write.

Before these changes (seed engine, same machine, 1,000 + 1,000 tables, p50 ms, ours / reference):
describe_namespace 1.91 / 4.22, namespace_exists 1.69 / 1.83, list_tables child 6.69 / 3.68, root list_tables
52.6 / 32.7, describe_table 2.11 / 2.04, table_exists 1.91 / 2.04, root table_exists 2.44 / 0.03, declare_table
10.9 / 5.4; a warm S3 poke took 4 LISTs (6 requests before the first-read cache), and reads slowed with every
write (one more fragment and version file each).

### Sensor pokes and BatchCreateTableVersions (issue 8)

- **Pokes measured as the sensors make them**: one hook call per poke (`check_table_exists` → TableExists,
  `check_table_version` → DescribeTableVersion), not TableExists + DescribeTableVersion (3 warm requests).
- **One listing per S3 directory listing** (`Storage._ls`): s3fs's `ls` follows an empty listing with a
  listing of the parent; for a root table not there yet that parent is the whole root (a LIST per 1,000 names).
  A warm existence poke of a missing root table took 5 requests at 100 tables (4 LISTs), now 2.
- **Root TableExists lists `<name>.lance` once** (`_find_table(listed=True)`): the manifest-first fallback
  repeated the listing the fast path had just made.
- **BatchCreateTableVersions** (`versions.py`): the `table_version` rows of every entry come from the cached
  `__manifest` rows in one pass (`ManifestTable.children_of`) instead of a Lance SQL scan per entry; the tables
  and their namespaces in one lookup (`batch_create_table_versions`); one names-only `_versions/` listing per
  entry serves the scheme check and the version check (was two detailed listings); one head of the staged
  manifest (was exists + head). On S3 the per-entry requests (listing, head, finalize: read, put-if-not-exists,
  delete, head) run in a thread pool (`versions._each`, 16 threads, rebuilt after a fork); locally they stay
  sequential (measured: threads were slower, 45-80 ms against 30-45 ms for 100 tables, on 2 cores). Validation
  errors still come before any write, the rows are still inserted in one merge-insert (all or nothing), errors
  still name the first offending entry in entry order, and the repoint is still one upsert for all rows."""

ISSUE_38_NOTES = """## Before and after issue 38 (scale, scale_managed, REST, writers)

Issue 38 restructured the provider (one root-to-URI rule, layers, one rule per fact, the suite); its acceptance asks
for the same benchmarks before and after, within run-to-run spread. Measured 2026-11-27 on a quiet machine (nothing
else running) with `scripts/bench_compare.py --before 5ecbabb --after 77da42b` (each commit exported with its own
venv and catalogs; rounds interleaved A B, B A), `BENCH_SCALE_SIZES=1000,10000,100000` (the 1,000,000-table
catalogs of two commits do not fit this disk twice), 2 rounds (a round of both commits takes ~17 min; the third
did not fit the session). *After* (77da42b) holds issues 40 and 42 as well. Medians; *spread* is the before
commit's max/min over its rounds; a ratio above 1 is slower (fewer calls/s for REST and writers).

| figure (ours) | 5ecbabb | 77da42b | ratio | spread |
|---|---:|---:|---:|---:|
| scale, 1,000 tables: describe_table p50 ms | 0.065 | 0.099 | 1.51 | 1.23 |
| scale, 1,000 / 10,000 / 100,000: table_exists p50 ms | 0.048 / 0.078 / 0.065 | 0.050 / 0.054 / 0.057 | 1.03 / 0.70 / 0.88 | 1.29 / 2.38 / 1.61 |
| scale, 1,000 / 10,000 / 100,000: declare_table p50 ms | 3.14 / 2.78 / 2.90 | 3.66 / 3.13 / 3.28 | 1.16 / 1.12 / 1.13 | 1.36 / 1.14 / 1.21 |
| scale, 100,000: open ms (construct + first describe) | 20.1 | 29.4 | 1.46 | 1.12 |
| scale_managed 10x100: describe_table_version old p50 ms | 0.076 | 0.149 | 1.97 | 1.06 |
| scale_managed 10000x100: list_table_versions page p50 ms | 1.15 | 1.31 | 1.14 | 1.00 |
| scale_managed, every shape: new version p50 ms | 13.5 / 13.3 / 14.0 | 11.3 / 11.0 / 12.1 | 0.82-0.86 | 1.06-1.29 |
| REST, 8 clients: describe / exists / list / declare calls/s | 2090 / 3105 / 2639 / 624 | 2162 / 2907 / 2248 / 586 | 1.03 / 0.94 / 0.85 / 0.94 | 1.01 / 1.13 / 1.07 / 1.00 |
| REST, 8 clients: server CPU µs per list / declare | 325 / 1422 | 383 / 1508 | 1.18 / 1.06 | 1.06 / 1.00 |
| writers, processes ÷ reference (local 4 / 8, S3 4 / 8) | 1.13 / 1.62 / 1.23 / 1.81 | 1.25 / 1.52 / 1.37 / 1.76 | - | 1.14 / 1.03 / 1.00 / 1.16 |
| section seconds: scale / scale_managed / rest / writers | 46 / 257 / 107 / 100 | 46 / 255 / 116 / 108 | 0.98-1.08 | 1.00-1.68 |

The whole comparison (`benchmarks/results/compare-5ecbabb-77da42b.md`, 226 figures of ours): most medians fall within the
spread; the ones above are the largest moves either way. Two rounds make a narrow spread, so the wall-clock p50s
of sub-millisecond reads (the 1.5-2x rows) were checked by CPU time per call in one process, both commits in
turn, 3 rounds, on the catalogs that run built: describe_table / table_exists / list_tables (100) at 1,000
tables 66-78 / 47-75 / 273-374 µs before, 70-74 / 47-50 / 273-287 µs after; managed 10x100 describe_table_version
121-171 µs before, 121-137 after; list_table_versions 758-906 µs before, 823-954 after (+8% by median, within
the spread); declare CPU per call 2,935 µs before, 2,744 after (management off; later rounds were loaded). No
figure shows a change in the CPU an operation costs beyond the spread; the wall-clock rows above 1.2x are
sub-millisecond p50s of two rounds."""  # noqa: E501


RUN_IT = """## Running it

`make bench` (`python -m benchmarks`) runs every section; the large catalogs (1,000,000 tables) make it take an
hour or more on 2 shared cores (see the run time per section below). `BENCH_QUICK=1 make bench` is a smoke run
(small sizes, few repetitions) that writes `benchmarks/results/quick.{md,json}` and leaves this page alone.
`BENCH_ONLY=operations,poke` runs some sections (by the prefix of their results key: operations, batch, writes,
poke, s3_writes, threads, processes, data_plane, scale, scale_managed, spark, writers, soak, page, rest) and
`BENCH_SIZES=300,1000,10000` picks the catalog sizes of the operations and poke sections; such partial runs write
`benchmarks/results/partial.json` only (the last full run's `latest.json` and this page stay as they are).
`BENCH_SCALE_SIZES=1000,10000,100000` picks the large-catalog sizes (1,000 is always measured: the flatness
baseline); `BENCH_SCALE_MANAGED_SHAPES=10000x100,100x10000` picks the managed-mode shapes (tables x versions; 10 x
100 is always measured: the flatness baseline); `BENCH_DIR=<dir>` builds the catalogs there and keeps the large
ones between runs (`scale-<N>/`, `scale-managed-<shape>/`, reused when their format matches). One section alone:
`python -m benchmarks.<module>` for scale, scale_managed, writers, soak, page and rest. `python -m benchmarks.report`
renders this page again from `latest.json`. Raw numbers of the last full run: `benchmarks/results/latest.json`.

Two commits side by side (issue 38: the same benchmarks before and after, within run-to-run spread):
`python3 scripts/bench_compare.py --before 5ecbabb --after main --rounds 3` exports each commit into its own tree
and venv, runs the scale, scale_managed, rest and writers sections of each in turn, in alternating order each
round, and writes `.bench-compare/summary.md`: per figure, each commit's median, the ratio and the before
commit's own spread over its rounds (`--sections` another list, `--quick` the smoke versions).

Issue 42's rows (their table near the top of this page): `make bench-issue42` (`scripts/bench_issue42.py`) exports
the package of commit `ceec513` (the last before the issue's changes) with `bench_compare`'s exporter, runs the
managed section with it (results key `managed/ceec513`), then every row's section in one merged run of this
checkout, the short-lived writers and the authenticated REST load with that commit's engine and server in the same
runs (`BENCH_SHORT_LIVED_BEFORE`, `BENCH_REST_BEFORE`), and renders this page. It prints first what the last
measurement of those sections took; `ISSUE42_ARGS=--quick` runs the smoke versions, `ISSUE42_ARGS=--sections=...`
some of the sections."""

#: Figures measured once by hand, by a script outside this harness (issue 42), kept so that a render keeps them.
ISSUE_42_NOTES = """\
## The managed commit at its floor (issue 42; measured 2026-11-27 on a shared, heavily loaded 2-core machine)

One pylance append through the namespace (`lance.write_dataset(..., namespace_client=ns, mode="append")`),
ours with `table_version_management=true`, the reference with `table_version_tracking_enabled=true`; 2 tables x
6 appends after 2 warm-up versions (`/tmp`-style script: the engine's storage calls counted by wrapping
`Storage`, S3 requests by `benchmarks/s3_counter.py`).

| per append | before | after | reference, tracking |
|---|---:|---:|---:|
| `__manifest` commits | 2.00 | 1.00 | 0 |
| S3 (moto) requests, whole append | 32.25 | 26.33 | 23 |
| S3 requests of `create_table_version` | 20.25 | 14.33 | - |

S3 requests by kind, before: PUT 12, LIST 8, HEAD 7, GET 4, DELETE 1, POST 0.25; after: PUT 8, LIST 6.17,
HEAD 7, GET 4, DELETE 1, POST 0.17.

The managed section now measures the protocol's floor in its own turns, runs and spread (section "Table version
management against the reference's tracking mode"). Second pass (2026-11-27, other helpers' test suites running,
load average 2-13: indicative). A cProfile of the engine's operations (20 tables x 5 appends after 3 warm-up
versions) counts per append: one call each of `describe_table`, `list_table_versions` and `create_table_version`
from pylance; one `__manifest` commit (a Lance Update: one `write_fragments` and one commit, the floor's two
calls); one copy, one delete and one `stat` of the final manifest; 11 more `stat`s and 3 directory stamps
(freshness checks and version probes, ~15 µs each on local disk). Cut: the repoint read back the small fragment
the commit before it had written (`fragment.to_table()`, ~1.2 ms per append under cProfile); it now takes those
rows from memory (`fragments.small_fragment_rows`: the rows written to that data file, one batch, compared with a
read in check mode), and the repoint's and the insert's rows are derived in one step. The section, 2 runs each
(`BENCH_MANAGED_RUNS=2 BENCH_MANAGED_BEFORE=ceec513`): before, ours ÷ reference 2.03x and 2.23x, ours ÷ floor
1.37x and 1.60x; after, 1.63x and 1.60x, ours ÷ floor 1.13x and 1.06x. CreateTableVersion at 1,000 tables (5
series of 30, load 13): ours ÷ reference 2.00x (1.65-2.15x), ours ÷ floor 0.75x (0.60-0.88x): ours' copy and
checks cost less than the reference's, so a single commit is at its floor.

What was left above the floor in an append (~1 ms of ~13): Python's share of each callback from pylance's Rust
threads (the engine runs it on its own thread: a pylance call made on a Rust thread crashes the interpreter), the
in-memory row index kept in step with the commit (pyarrow calls, ~1 ms per append under cProfile), and
DescribeTable's schema. Seed 000 has DescribeTable open the table and answer its schema and version, and ours
does (a pylance open of the new version, ~0.5 ms); the reference in tracking mode answers pylance's DescribeTable
with neither (measured: `version` and `schema` None), which the request model allows while
`load_detailed_metadata` is unset. Dropping them would change what every DescribeTable caller gets: not done.

### Third pass: the Python around the commit (2026-11-27, load average 4-15 from other helpers: indicative)

Where the CPU went: each operation's thread CPU, function by function (`time.thread_time` around the engine's
functions, no profiler; 20 tables x 6 appends after 2 warm-up versions, two runs of each engine in turn, load
12-15); what was left was pyarrow's cost per call (5-25 µs whatever the length) paid many times per append,
several of them per chunk of a tail that gains a chunk per append (~30 between merges):

| engine thread CPU per append, µs (run 1 / run 2) | before (7da89b2) | after |
|---|---:|---:|
| the three operations pylance calls back | 5,723 / 7,717 | 4,641 / 5,310 |
| create_table_version | 3,918 / 5,334 | 3,347 / 3,951 |
| describe_table | 1,406 / 1,838 | 897 / 925 |
| the next row index, derived from the commit (`Snapshot.follows`) | 1,292 / 1,540 | 388 / 391 |
| a table's version line (`RowIndex._read_version_line`) | 534 / 673 | 40 / 41 |
| DescribeTable's open of the new version | 330 / 441 | 275 / 275 |
| the repointed row taken out of its fragment (`fragments_holding`) | 275 / 345 | 183 / 182 |
| 11 `stat`s and 3 directory stamps | 209 / 282 | 228 / 259 |

- **The next row index** (`RowIndex.replaced`, the repoint plus the insert). A filter of the tail table cost ~5 µs
  per chunk and column (~0.5 ms at 30 chunks): the replaced rows are now cut out by slices
  (`manifest_rows.rows_without`), as is the repointed row out of the small fragment (`fragments_holding`: a
  filter by a list of booleans, ~0.26 ms under cProfile); a commit's two rows are matched for a staged manifest in
  Python (~60 -> ~7 µs; `tuning.ROWS_IN_PYTHON`); rows already in the schema are not cast.
- **A table's version line** (`RowIndex.version_line`, read once per `__manifest` version and table, so once per
  append; ~27 pyarrow calls): the part in the sorted base is read once per base and shared by the versions that
  commits derive from it (a merge or a filter of the base starts a new one); a short tail's part is found in
  Python among its ids, kept sorted commit by commit.
- **DescribeTable's open of the new version**: one pylance `Session` per instance and process
  (`Catalog.schema_session`, metadata cache bounded at 32 MiB, no index cache): a first open of a version
  0.17-0.23 -> ~0.10 ms CPU, measured alone. Lance keys a cached manifest by its file's e-tag: a table re-created
  outside at the same location, or given a new version outside, is described afresh, from any thread
  (`tests/namespace/test_describe_session.py`).

| per managed append, 40 tables x 25 versions (the managed section, 3 runs each, load 8-11; each run's own ratio) | before (7da89b2) | after |
|---|---:|---:|
| ours ÷ floor, wall p50 | 1.01x (0.99-1.10x) | **0.85x** (0.84-0.91x) |
| ours ÷ reference tracking, wall p50 | 1.60x (1.51-1.66x) | 1.24x (1.17-1.26x) |
| build of the catalog, ours ÷ floor | 1.02x (0.97-1.08x) | 0.86x (0.84-0.97x) |
| describe_table p50, ours ÷ reference | 0.76x (0.72-0.82x) | 0.48x (0.42-0.50x) |

| CPU per append (`python -m benchmarks.append_cpu --runs 4 --before 7da89b2`: 20 tables x 6 appends a run, process CPU time, runs in turn) | before | after |
|---|---:|---:|
| ours ÷ floor, CPU (median of the runs' per-turn medians) | 1.00x (0.88-1.19x) | **0.87x** (0.76-1.04x) |
| ours ÷ floor, wall | 0.99x (0.87-1.30x) | 0.81x (0.76-1.19x) |
| ours ÷ reference, CPU | 1.44x (1.32-1.59x) | 1.19x (1.13-1.36x) |

CreateTableVersion at 1,000 tables (the operations section's managed series alone, 5 series of 30, one run each,
load 7-9): ours ÷ floor 0.98x (0.90-1.08x) before, **0.74x** (0.56-0.80x) after; ours ÷ reference 2.68x -> 1.65x.
This machine's spread (±30%) shows in the ranges; ours ÷ floor is under 1.0x in every run but the fourth
`append_cpu` run (1.04x CPU, 1.19x wall, at load 10.7). Again on a quiet machine:
`BENCH_ONLY=managed/before,managed/after BENCH_MANAGED_RUNS=5 BENCH_MANAGED_BEFORE=7da89b2 python -m benchmarks`
(a partial run: `benchmarks/results/partial.json`; `BENCH_MERGE=1` for the page) and
`python -m benchmarks.append_cpu --runs 5 --before 7da89b2`.

Measured and left: (c) the hop of a callback onto the engine's thread costs ~22 µs CPU (two per append); a bare
queue to a thread of its own ~12 µs: ~20 µs per append, not worth a second way of running operations. (d) Per
append, 3 directory stamps and 12 `stat`s, each one ~15 µs: 3 per operation are the freshness check (the stamp
of a `_versions/` that a commit just changed is trusted only once settled, 2 s: then manifest N+1 absent and N
unchanged); 3 are the probes of the table's next manifest (a version written round the namespace: describe, list
and commit each answer from storage at their start); one each for the staged manifest (the row's size and
e-tag), our new `__manifest` version (its e-tag, which tells a re-created catalog apart) and the final manifest
(the row's e-tag). Each is something the protocol or the freshness rule needs: none removed.

## Spark staging at both sizes of issue 42, and where the time goes (2026-11-27, machine shared and loaded: indicative only)

Measured while ~7 other jobs shared the 2 cores (load average 23-32 during the 2 x 2M runs and the first three
4 x 10M rounds, 4-11 afterwards). Each line is one run of `python -m benchmarks.spark_staging ... --no-load`
(5 timed rounds after a warm-up, Parquet and ours interleaved in one Spark session); per-round ratio = ours ÷
Parquet of the same round. "A/B" is one extra session (4 x 10M, 5 rounds, load 7-10) timing Parquet, ours and
a variant of ours side by side with the CPU split. The code measured is this branch's (no change to the staging
path; see "tried" below).

| size | run | Parquet s (median) | ours s (median) | per-round ratio: median (range) | best ÷ best | CPU s Parquet | CPU s ours: JVM + workers + driver | ours: stage / commit (median) |
|---|---|---:|---:|---:|---:|---:|---:|---:|
| 2 x 2M | benchmark, load 23-32 | 14.97 | 9.78 | 0.65 (0.41-0.83) | 0.63 | 2.34 | 1.97: 1.28 + 0.63 + 0.06 | 9.41 s / 296 ms |
| 4 x 10M | benchmark, load 23-32 then 4-6 | 23.93 | 22.01 | **0.81** (0.36-0.94) | **0.91** | 13.40 | 12.47: 6.62 + 5.71 + 0.11 | 21.81 s / 56 ms |
| 4 x 10M | A/B session, load 7-10 | 23.41 | 10.54 | 0.47 (0.35-0.58) | 0.50 | 12.74 | 10.78: 6.39 + 4.35 + 0.08 | - |

The 4 x 10M benchmark run took 15.7 min under that load (Spark session start 2.4 min, the warm-up round
2.6 min), with `spark.driver.memory` 7g (JVM resident 3.6 GB; the machine's 24 GiB were never
short). The 2 x 2M run: 9.2 min under load 23-32. Fragments: 1,048,576 rows per data file (`max_rows_per_file`): one file per task at
2 x 2M, 10 per table (5 per task) at 4 x 10M.

Verdict: 2 x 2M meets the goal (0.65x per-round median here; the last full run on a quieter machine, in "Spark staging throughput":
0.72x median, 0.76x best). **4 x 10M does not, on a quiet machine**: ours costs 0.85-0.93x Parquet's CPU at
that size, so once both saturate the two cores the wall ratio tends to that (0.81-0.94x in the quietest rounds,
4 and 5); it looks better (0.35-0.58x) only while other jobs slow Parquet's disk-bound writes. Where the time goes:

- **Driver: nothing left.** Planning (describe/declare, schema), staging the manifests and the one batch commit
  use 0.06-0.11 s of driver CPU per round at both sizes; the commit is 56 ms at 4 x 10M (296 ms at 2 x 2M
  with load 30). Fragment metadata comes back as one small JSON string per data file (10 per table).
- **Executors: the floor plus Lance's encoding.** Ours' JVM CPU is the transfer floor's (rows to Arrow for
  `mapInArrow`: 0.16 s per million rows at 4 x 10M); the Python workers spend ~0.11-0.14 s per million rows,
  nearly all in Lance's encoder (the Arrow read from the JVM is 0.03 s per million: the transfer floor's worker
  CPU). Per million rows ours costs 0.39-0.49 CPU-s at 2 x 2M (quiet last full run / here) and 0.27-0.31 at
  4 x 10M, Parquet 0.51-0.58 and 0.32-0.34: Spark's JVM writer gets much cheaper per row on larger files and
  tasks, ours less, so the ratio grows with size.
- **Tried, no gain, not kept:** a prefetch thread in the worker so that the JVM keeps converting while Lance
  encodes (2 x 2M, 8 interleaved rounds: CPU 1.57 vs 1.35 s, wall 2.75 vs 2.24 s: worse); merging Spark's
  10,000-row batches to 4 MiB before Lance (workers' CPU -4 to -10%, wall not better: A/B 11.94 vs 10.54 s);
  `spark.sql.execution.arrow.maxRecordsPerBatch` 50,000 (no measurable change in JVM CPU). Spark's batches arrive fresh
  from the IPC stream; the micro-benchmark that had shown 2.7x less Lance CPU for merged batches had fed Lance
  zero-copy slices of one table, which Lance encodes expensively.
- **What would reach 0.8x at 4 x 10M:** taking the rows out of the JVM without the per-row Arrow conversion (a
  JVM-side Lance writer, lance-spark) or cheaper encoding (Lance file format 2.0 encodes several times faster at
  ~3x the size: a change of what we store, so not made here).

## Spark staging, second pass: bigger Arrow batches, and what else was measured (issue 42, 2026-11-27, machine shared and loaded: indicative only)

Change: the staging jobs now also set `spark.sql.execution.arrow.maxRecordsPerBatch` (unless the session sets it):
about 4 MiB a batch by the schema's estimate, between Spark's 10,000 and 65,536 rows (`arrow_batch_rows`; 65,536
for the benchmark's 4 narrow columns; 10,000 when a column is binary, an array or a map). What is stored does not
change (Lance's default file format, 2.2 here, and its encodings; the same fragments). Each batch costs the Python
worker a fixed amount (PySpark's Arrow reader, the hand-over to Lance, Lance's intake): ~0.3 ms, ~10% of the
staging's CPU at 10,000 rows.

A/B, one Spark session each, paths interleaved, CPU seconds (JVM + workers + driver, user + system) per round,
median; 2 x 10M rows unless said; load average 6-12 from other helpers (CPU is inflated under load for every path):

| rows per Arrow batch | session 1 (6 rounds) | session 2 (6 rounds) | session 3 (6 rounds) | workers, session 3 (user + system) |
|---|---:|---:|---:|---:|
| 10,000 (before) | 6.10 | 5.66 | 5.90 | 1.90 + 0.54 |
| 32,768 | | | 5.36 | 1.75 + 0.31 |
| 50,000 | 5.45 | | 5.16 | 1.66 + 0.24 |
| 65,536 (now) | | 5.12 | 5.10 | 1.57 + 0.28 |
| 100,000 / 131,072 | 5.43 | | 5.31 | 1.49 + 0.47 |
| 250,000 | | 4.97 | | |
| 1,000,000 | | 5.58 | | |
| Parquet, same session | 7.09 | | | |

The JVM's share does not move (2.9-3.3 s); above ~100,000 rows the workers' system time grows again (fresh
buffers for every large batch). 4 x 10M, one session, 3 rounds, load 8-11, CPU-s per round: Parquet 16.07,
13.91, 16.44; ours with 10,000-row batches 12.84, 11.87 (its second round not counted: a worker process ended
during it); with 65,536 11.50, 11.06, 11.17.

The benchmark, this branch (`python -m benchmarks.spark_staging --tables 4 --rows 10000000 --repeat 5 --no-load
--only transfer`), two runs:

| run | load average | Parquet wall s (median) | ours wall s (median) | per-round wall ratio: median (range) | best ÷ best | CPU s Parquet | CPU s ours: JVM + workers + driver | per-round CPU ratio: median (range) |
|---|---|---:|---:|---:|---:|---:|---:|---:|
| 1 | 7-8 | 13.93 | 9.70 | 0.73 (0.52-0.93) | 0.69 | 13.02 | 10.62: 6.24 + 4.31 + 0.08 | 0.82 (0.75-0.98) |
| 2 | 1.4-5 | 12.01 | 10.03 | **0.84** (0.76-0.87) | **0.83** | 13.08 | 11.78: 6.95 + 4.65 + 0.08 | **0.87** (0.80-0.92) |
| before (last quiet run, "Spark staging throughput") | quiet | 7.34 | 6.46 | 0.86 (0.86-0.91) | 0.86 | 14.09 | 12.12: 7.34 + 4.69 + 0.08 | 0.86 |

Run 1's wall ratio is not a quiet figure (the load slows Parquet's disk-bound writes). 2 x 2M (`--tables 2 --rows
2000000`, load 5-8): CPU ratio per round 0.81, 0.65, 0.75, 0.91, 0.71 (median 0.75), wall best ÷ best 0.76.
Verdict: **4 x 10M is still not at 0.8x**: the bigger batches take 0.5-0.9 CPU-s off the workers in the A/B
sessions (the workers' system time varies most: 0.4-1.5 s a round, with the other helpers' disk writes), 3-12%
of ours' CPU, and ours stays at 0.82-0.87x Parquet's CPU at this size; 2 x 2M stays met.

Measured and not kept (numbers per 2 x 10M round unless said):

- **Lance's thread pools in each worker** (`LANCE_CPU_THREADS=1`, two sessions each, 4 rounds, 65,536-row
  batches): CPU 5.41 and 5.64 vs 5.37 and 5.68 with the default pool; the workers' user time drops
  (1.56 vs 1.67 s) and their system time rises (0.51 vs 0.20-0.43 s). `LANCE_IO_THREADS=1` too: no gain in a
  single-process test (0.41-0.49 vs 0.42-0.47 CPU-s per 5M rows).
- **Lance encoder settings that keep the format**: `data_cache_bytes` 2-128 MiB, `max_page_bytes` 1-64 MiB,
  `max_rows_per_group` None / 10,000: the string column (FSST, most of Lance's time: 0.25 of ~0.42 CPU-s per 5M
  rows) costs the same or more (0.25-0.32 s). File format 2.0 costs 0.15-0.24 s for the whole table (a change of
  what we store: not an option).
- **Where the JVM's time goes** (Java Flight Recorder and `perf` during the timed rounds): per row and per
  field, Spark's `ArrowWriter` (`handleSafe` capacity checks, `StructWriter`: `mapInArrow` wraps every row in a
  struct) and reading the cache; the C2 JIT compiler takes 6-7% of the CPU of every timed round, for Parquet and
  for ours alike. Both writers keep the two cores busy (≥ 2 runnable threads in 88-98% of samples), so the wall
  ratio follows the CPU ratio; the driver's planning, staging and commit are 0.05-0.1 CPU-s.
- **Not built, the next step**: reading the rows as Arrow batches without `mapInArrow`'s struct wrapping, through
  Spark's `Dataset.toArrowBatchRdd` (a JVM method of the classic API, reached with py4j) and a PySpark RDD of the
  serialised batches. Prototype at 4 x 10M, same session as above, 40,000-row batches: **10.11, 11.87, 9.87
  CPU-s vs 11.50, 11.06, 11.17** (JVM 4.84-4.96 vs 6.83-6.88 s; the workers' system time is higher, 0.95-2.21 vs
  0.41-0.60 s); at 2 x 10M, 10,000-40,000-row batches, 4.78-4.95 vs 5.83 in the same session, but at 65,536-row
  batches 5.16 vs 5.05 (the JVM copies each batch into a heap array). Left out: a private JVM API, no Spark
  Connect, the workers would have to be given the JVM's exact Arrow schema (the batches arrive without it), and
  the gain is within this machine's noise at 2 x 10M.

## Spark staging, third pass: the rows leave the JVM without mapInArrow's struct (issue 42, 2026-11-27, machine shared and loaded: indicative only)

Change: on a classic Spark session the staging's jobs take the rows as an RDD of Arrow record batches that Spark's
JVM builds (`Dataset.toArrowBatchRdd(rows, timeZone, true, false)`, PySpark 4.2's JVM, reached with py4j) instead of
`mapInArrow`, which wraps every row in a one-field row and writes it through a struct column
(`MapInBatchEvaluatorFactory`). The workers read the batches with the schema the JVM wrote them with
(`ArrowUtils.toArrowSchema`, same time zone and flags, serialised by Arrow Java's `MessageSerializer`: exact),
each message into a buffer of pyarrow's pool (`writer.ArrowMessages`). Spark Connect, or a JVM without those
methods, falls back to `mapInArrow` (`transfer="map_in_arrow"` forces it; `StagedDataFrame.transfer` says which
ran). What is stored does not change: the same batches reach the same `write_fragments` (Lance's default format
and encodings); a test writes the same DataFrame, 11 types with nulls, through both routes and compares the tables.

Public routes checked first, none avoids the per-row struct in PySpark 4.2: the Python Data Source writer
(`df.write.format(<python source>)`: `PythonBatchWriterFactory` runs `MapInBatchEvaluatorFactory` too, and
converts to rows for a non-Arrow writer); `spark.sql.execution.arrow.pythonUDF.columnarInput.enabled` (new in 4.2)
serves scalar Arrow UDFs only and passes columns through only from Arrow-backed scans (DSv2): from a cache or a
Parquet scan it copies every row into a `HybridRowQueue`, and a scalar UDF returns one value per row.

CPU seconds per round at 4 x 10M (the benchmark's cached DataFrames), one Spark session, paths interleaved; the
JVM by psutil, the workers by `getrusage` inside each task (psutil loses the time of workers that exit);
`drain`: jobs reading every batch, writing nothing:

| run (load average from other helpers) | Parquet (JVM) | drain: mapInArrow / RDD | ours via mapInArrow: JVM + workers | ours via the RDD: JVM + workers |
|---|---:|---:|---:|---:|
| A, 5 rounds (9-15) | 14.75-15.40 | | 7.45 + 5.26 (workers' system time 1.5-2.3) | 6.36 + 5.41 (1.3-2.1) |
| B, 4 rounds (7-13) | 14.29 | 7.31 / 5.92 | 8.07 + 6.48 | 6.17 + 5.76 |
| C, 3 rounds (5-7.5) | | | 7.26-9.06 + 5.31-6.36; 13.72 (13.47-14.84) in all | 5.95-9.16 + 4.01-4.37; 10.41 (10.06-13.31) in all |

Medians. In A the RDD route was also run with PySpark's `NoOpSerializer` (a new `bytes` per batch): the workers'
system time rose to 2.2-3.7 s a round (fresh pages for every batch), hence `ArrowMessages`. The RDD route takes
~1.1-2.1 CPU-s a round off the JVM (medians; one round of C had a 9.2 s JVM, a collection or the load) and 0 to
1.6 off the workers (medians A 5.26 vs 5.41, B 6.48 vs 5.76, C 5.69 vs 4.06: PySpark's `mapInArrow` reader and
its struct flattening cost more than reading the messages, by more than this machine's noise only in C); in C,
~25% of ours' CPU, which puts ours at ~0.7x Parquet's
CPU (Parquet 13.9-15.4 s in these sessions; the last quiet run: 13.86). Wall in C's calmest rounds (load 5-6):
5.5 s vs 7.7-8.3 s through `mapInArrow`. Smaller batches for the RDD route (C: 24,576 rows 10.19, 32,768 10.40,
65,536 10.41 CPU-s, medians; the JVM's share 5.4-5.6 vs 5.9-9.2 s) are within this machine's noise: the
batches stay at 65,536 rows for this schema (`arrow_batch_rows`, both routes); worth re-measuring on a quiet machine.

The benchmark with this branch's code, 3 rounds (`--only ours_map_in_arrow`; load 5-9, Spark tests of this
branch running during rounds 0-1), CPU-s per round (JVM + workers): Parquet 16.28, 16.76, 16.59; ours (the RDD
route) 13.07, 10.03, 11.52 (JVM 5.40-6.71); ours through `mapInArrow` 14.94, 12.33, 11.36 (JVM 7.05-9.14). Per-round
CPU ratio ÷ Parquet: ours 0.80, 0.60, 0.69 (median **0.69**), through `mapInArrow` 0.92, 0.74, 0.68 (0.74). Wall:
Parquet 12.00, 12.47, 16.53 s; ours 10.72, 7.20, 9.10 (best ÷ best 0.60x, median ÷ median 0.73x); through
`mapInArrow` 11.04, 8.96, 9.67. Not a quiet figure (the load inflates Parquet's disk-bound writes and everyone's
CPU); the integrator's quiet `make bench-issue42` decides.

**Quiet** (`make bench-issue42` on `2f1875a`, nothing else running; 5 interleaved rounds, medians): at 4 x 10M
ours 6.08 s, ours through `mapInArrow` 6.42 s, Parquet 7.85 s; per-round ratio ÷ Parquet **0.77x** (0.74-0.88)
against 0.84x (0.77-0.90) through `mapInArrow` in the same rounds; CPU per round ours 11.48 s (JVM 7.66 + workers
3.83), through `mapInArrow` 12.07 s (7.96 + 4.20), Parquet 14.82 s. At 2 x 2M: 0.71x (0.59-0.77) against 0.79x.
On the quiet machine the RDD route saves ~5 % of ours' CPU and wall, far less than the 25 % measured under load
above (the load inflated `mapInArrow`'s JVM time most); that 5 % is what takes 4 x 10M under 0.8x by the median,
while best ÷ best stays at 0.81x (5.96 / 7.40 s) and Parquet's JVM took 14.1-15.2 CPU-s a round here against
13.9 in the run before (the same code path for Parquet: this machine's drift from run to run).

Found on the way and fixed: a DataFrame with a decimal column failed to stage on **both** routes (Lance panicked:
"Memory pointer ... is not aligned"): Spark's JVM pads the buffers of its Arrow batches to 8 bytes, arrow-rs needs
16-byte decimals. The writer now copies a decimal column (or a nested one holding decimals) whose buffer is off a
16-byte boundary (`pa.concat_arrays`, that column of that batch only; none for the benchmark's types).

Re-run: `python -m benchmarks.spark_staging --tables 4 --rows 10000000 --repeat 5 --no-load --only
ours_map_in_arrow,transfer_rdd` (ours, ours through `mapInArrow`, the RDD route's floor, Parquet, interleaved), or
`make bench-issue42` / `BENCH_ONLY=spark BENCH_MERGE=1 make bench` (sections `spark` and `spark_large`; the latter
now times `ours_map_in_arrow` and `transfer_rdd` as well).

## Short-lived writer processes: where a writer's CPU goes, and the machine turn's wait (issue 42, 2026-11-27, machine shared and loaded: indicative only)

Each writer of "Short-lived writer processes" now reports its CPU by phase (`benchmarks/writer_process.py`; the
generated section shows the table after a re-run). Measured by hand while other helpers ran (1-minute load 4-10),
3 interleaved runs per mode of ours, this branch's parent `77da42b` (*before*) and the reference, 8 x 25
declares; CPU milliseconds of one writer process, median over the runs of the mean of its 8 processes:

| management | engine | start | import | construct | first declare | 24 declares | per declare | exit | finalise |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
| off | ours | 1014 | 471 | 1 | 25 | 232 | 9.6 | 0 | 353 |
| off | before | 913 | 453 | 1 | 32 | 297 | 12.4 | 0 | 302 |
| off | reference | 1047 | 438 | 2 | 16 | 164 | 6.8 | 1 | 307 |
| managed | ours | 885 | 446 | 1 | 26 | 267 | 11.1 | 0 | 335 |
| managed | before | 883 | 469 | 1 | 34 | 314 | 13.1 | 0 | 311 |
| managed | reference | 875 | 414 | 2 | 16 | 270 | 11.3 | 1 | 313 |

*start* is the interpreter with `lance_namespace` (both engines import it first) and *finalise* the interpreter's
shutdown (Lance's and Arrow's teardown): ~1.2 s of a writer's ~2 s, the same for both engines. The import is at
parity. What is the engine's own is ~0.3 s: the first declare (ours +10 ms: opening `__manifest` and reading
its rows in Python, where the reference stays in Rust) and the 24 others. Building the namespace object costs
1-2 ms in both, and nothing runs at exit (a declare defers no repoint, so no exit flush is registered).

**Where ours spent more**: waiting for the machine turn (`writers_turn.MachineTurn`). A waiting process polled a
non-blocking `flock` every 0.1-1 ms: with 8 processes, 7 wait while one commits, ~12,000 wake-ups a second on 2
cores, CPU that the holder's commit queued for (an earlier profiled writer among 8 spent 0.73 s of its 1.6 s of declares
in the writers' turn: waiting for it, then reading what the others added). Now one thread of a waiting process
blocks in `flock` for all of its threads (each still waits at most `TURN_WAIT_SECONDS`) and the kernel wakes it
the moment the holder releases: its declares' CPU fell 8-28 % (off) and 5-24 % (managed) run by run against
*before* in the runs above (median 232 vs 297 ms and 267 vs 314 ms per process); a second set of 3 interleaved
runs of the two alone (load 5-10): 236-277 vs 317-361 ms (off), 213-223 vs 250-269 ms (managed).

Interleaved pairs of whole runs (one run: the 8 writers and the driver that starts them and lists the tables;
5 pairs after a warm-up, load 5-8), ours ÷ reference: management off, CPU 0.93x (0.89-1.04), wall 0.89x
(0.83-1.12), i.e. writes/s 1.13x; managed, CPU 0.99x (0.97-1.15), wall
1.02x (0.97-1.16), i.e. writes/s 0.98x: the managed goal is not shown met here.
Re-run on a quiet machine: `BENCH_ONLY=short_lived BENCH_MERGE=1 make bench` (5 runs per mode, *before* =
`ceec513` alongside, the phase table included).

Next, not made for lack of time: a commit that finds another process held the turn opens the latest
`__manifest` version with `checkout_latest`, a listing of `_versions/` (~1,000 names after 5 runs: 0.42 ms of
CPU, against 0.09 ms for `checkout_version` of a known number, measured on a 1,000-version table), where probing
N+1, N+2 with a `stat` would not list: at most 2 opens per declare, ~0.7 ms of its ~10 ms; and the first
declare's read of every row in Python (+10 ms against the reference).
"""  # noqa: E501

#: Issue 42's third pass on the short-lived writers (measured by hand, kept so that a render keeps them).
ISSUE_42_SHORT_LIVED_NOTES = """\
## Short-lived writer processes: what runs inside the machine turn (issue 42, third pass, 2026-11-27, machine shared and heavily loaded: indicative only)

The quiet run above has the writers' CPU at parity (off 1.03x, managed 1.06x the reference's) but writes/s at
0.93x and 0.90x: ours' commits take the machine's writers' turn one process after another
(`writers_turn.MachineTurn`), so what a commit does while holding it is done on one core while the other
writers wait. Measured by wrapping `MachineTurn.hold` in the writer processes (8 x 25 declares into the 50-table
catalog, 2 runs per sample; CPU of the holding thread, `time.thread_time`) and by cProfile with a CPU timer over
the turn of one writer among 8:

- **The fix: fsspec imported inside the turn.** Under 8 writers, 25-30 % of commits find in the turn that the data
  file they wrote beforehand cannot be committed as it is (a compaction rewrite became due, or is no longer due:
  `group_commit.InsertGroup`) and delete it. `Storage.delete` went through fsspec, whose first use imports it
  (and asyncio): 60-110 ms of CPU once per process, while the machine's 7 other writers waited. On local disk the
  delete is now `os.remove`, what fsspec's local `rm_file` calls (`tests/namespace/test_import_cost.py` checks
  that no fsspec is loaded). The other writers' turn work is unchanged.
- **CPU inside the turn per writer process** (before = `7da89b2`, this branch's parent; 2 samples each, load
  8-10): management off 132 and 127 ms -> 92 and 105 ms (mean per commit 5.3 and 5.1 -> 3.7 and 4.2 ms);
  managed 115 and 110 ms -> 90 and 81 ms (4.6 and 4.4 -> 3.6 and 3.2 ms). The turn's wall per commit is 3-4x
  its CPU at this load (median 8.5-14 ms): the holder is descheduled while 7 processes wait for it.
- **Whole runs**, interleaved triples of ours, before (`7da89b2`) and the reference, load 5.5-15 (other helpers'
  suites): management off, 13 runs: writes/s ours ÷ reference median 0.83x (0.46-0.94x), before 0.79x
  (0.42-1.48x); the writers' CPU ours ÷ reference 1.02x (0.95-1.22x), before 1.09x (0.88-1.26x). Managed, 7
  runs: writes/s 0.89x (0.62-1.25x), before 0.95x (0.47-1.39x); CPU 1.03x (0.85-1.10x), before 1.08x
  (0.94-1.30x). The wall ratios spread far more than any change here: the goal (>= 1.0x) is not shown met and
  needs the quiet re-run (`BENCH_ONLY=short_lived BENCH_MERGE=1 make bench`).
- **CPU of one writer by phase** (ms, median over the same runs; ours / before / reference): off, import
  489 / 479 / 428, first declare 24 / 31 / 17, 24 declares 239 / 279 / 281, finalise 323 / 356 / 301; managed,
  import 458 / 476 / 409, first declare 21 / 30 / 16, 24 declares 246 / 287 / 279, finalise 319 / 319 / 316.

What a commit does in the turn now (per commit, ~3.2-4.2 ms of CPU): Lance's commit of the guarded append
(~2 ms, the floor: the reference's commit is the same call), reading the rows the other writers added since this
process's last read (~1-1.5 ms: the whole table in ~70-80 % of commits, since every 8th version is a compaction
rewrite and a process waits for ~7 commits of the others between two of its own), opening the latest version
(0.1-0.4 ms) and deriving the new version's row index (~0.2 ms). Measured, not kept:

- Opening the latest version by probing N+1, N+2 with a `stat` and `checkout_version` instead of
  `checkout_latest` (a listing of `_versions/`): 0.04 against 0.37 ms of CPU at 1,000 versions. Lance's commit
  does refuse a commit on a stale version found that way (tested: a removed middle version, the commit fails as a
  conflict), but a read would answer from version N+1 while an outside clean-up that kept a tagged N+1 removed
  N+2 and N+3 exists, and the retry of a commit would stay on it (`_is_latest` trusts "no N+2"): a wider miss
  than the one `snapshots.py` documents, for ~0.2 ms per commit. It needs a full listing on every conflict first.
- Handing a commit's rows to the next holder through a machine-local Arrow file (`rows_store` encoding): reading
  and indexing it costs 0.32 ms against 1.77 ms for a scan of an 8-fragment, 400-row `__manifest`, but saving it
  costs 1.1 ms and must happen before the turn is released to be found by the next holder: no gain.
- The import: our 40 modules cost 30-32 ms of CPU on top of `lance.namespace` (same bytecode); resolving the
  operations' type hints and signatures at import is 2.4 ms of it, the rest is spread over the modules (their
  dataclasses and classes): nothing large to make lazy.

- A writer whose last commit waited for another process writing beforehand only the append, never a rewrite it
  predicts from an older version (under contention the commit lands on a later version, where the prediction is
  wrong ~7 times in 8): data-file writes per process 31.0 -> 28.3 and discards 6.0 -> 3.3, but CPU in the turn
  79 and 88 -> 86 and 96 ms per process (2 samples each, load 5-10): the rewrites it rightly predicted are then
  written in the turn.

### Fourth pass: the turn's reads on deck, measured and removed (2026-11-27)

Measured by wrapping `MachineTurn.hold` in the writer processes (8 x 25 declares, 50-table catalog; loaded
machine): CPU of the whole process inside the turn (`getrusage`, Lance's worker threads included) is ~1.9x the
holding thread's (`time.thread_time`, the figure above), and a turn switches context ~56 times (`ru_nvcsw`): a
whole read of the 5-fragment, 300-row `__manifest` costs ~1.0-1.25 ms of process CPU and ~17 switches, one
fragment ~0.4 ms and ~5, the guarded append ~1.5 ms and ~18 (quiet, one process). The turn is never free: a
writer's operation reads the latest version right after its own commit (nothing newer yet) and its turn comes
after the commits of ~6 others (the version found in the turn was 5-8 ahead), so reading the others' rows just
before taking the turn would not help.

- **Kept: the committed version's rows derived after the turn** (`Snapshot.derive`, called by
  `ManifestTable.commit` once the turn is released; check mode still compares them in the committing call).
- **Built, measured quiet, removed: on deck.** Of the processes waiting for the turn, one at a time was on deck
  (a second `flock`) and read the latest version's rows there while the holder committed, so that in its turn
  only the holder's commit was left (version found in the turn 1 ahead in ~95 % of commits; whole reads in the
  turn 17-20 -> 0-8 per process; process CPU in the turn per writer, loaded, off 174 -> 139 ms, managed 196 ->
  152 ms). Its price was the declares' CPU outside the turn (the deck's read, then the holder's fragment read
  again in the turn: +20-25 % under load), and on the quiet machine the price won: one run of the section with
  *before* = `c8728c8` (the engine without the deck) in the same interleaved runs, 5 runs per mode, writes/s ÷
  the reference, median (runs): off, with the deck 0.93x (0.93, 1.25, 0.80, 0.91, 0.95), without 1.00x (0.91,
  1.04, 1.03, 0.90, 1.00); managed 0.94x (1.05, 0.99, 0.93, 0.89, 0.93) against 1.01x (0.78, 1.02, 1.05, 0.90,
  1.01); the writers' CPU ÷ the reference 1.05x / 1.04x with it, 0.98x / 0.95x without (1-minute load 0.6 at
  the start, 6.6 at the end: the machine's own runs). The whole `make bench-issue42` run before it had measured
  the deck at 0.91x / 0.91x.
- **Measured, not kept:** the duplicate check of a commit by one scan of the id column filtered on its ids
  (`present`), instead of indexing the whole version in the turn, the index left to the next operation: the
  scan costs what a whole read costs (~1.3 ms of process CPU, 13 switches: pylance's scanner and one task per
  fragment), and the next operation then read whole what it used to extend from the derived rows: 3 runs
  (load 9), the holding thread's CPU in the turn 86 vs 97 ms per writer, the declares' CPU 371 vs 287 ms.

Next (done in the fifth pass, below): commits of several processes grouped in one (a queue in the machine turn)
would take the per-commit floor (~1.5 ms) out of the serial path; this machine's spread (0.78-1.05x run to run for
one engine) is wider than any change measured here.

### Fifth pass: offers, the holder commits for the writers that wait (2026-11-28, quiet machine)

A writer that finds the turn held posts its rows (`offers.py`); the holder writes one data file with its rows and
the offers', commits it, and answers each offer; the waiter is done without writing, reading or committing.

- First version, not kept: the waiter wrote its own data file before the turn and offered its fragment metadata;
  the holder committed the offered fragments with its own. The catalog's version after two rounds of 8 x 25 declares fell 403 -> 181, but every
  commit added one fragment per offer, compaction came sooner, and readers read whole more often: interleaved
  A/B against `5b2be41` (8 x 25, 8 pairs, loaded by another job): CPU 1.02-1.24x, writes/s 0.66-1.19x.
- Kept: the rows travel in the offer, the holder writes them. Interleaved A/B against `5b2be41` (6 pairs, quiet):
  writes/s 1.06-1.13x (median 1.09x), CPU 0.92-0.97x, declares' CPU per process 0.15-0.18 s against 0.18-0.30
  s. In a profile (process CPU, 8 x 25, all 8 writers): 55 commits for 200 declares, 55 data files written
  (249 before), 38 whole reads (155), the declares 1.78 s against 2.35-3.35 s before.
- Then the parent check moved into the commit (the version the guarded append commits on top of), instead of a
  read of the latest version after the insert: in the same profile the read moved to the next operation's first
  check (every declare reads the latest version once), so the declares' CPU did not change (1.95 s).
- The section, quiet, twice (5 runs per mode each, *before* = `5b2be41` in the same runs), writes/s ÷ the
  reference: run 1 off 1.07x (1.02-1.16), managed 1.00x (0.95-1.16; 0.996); run 2 (with the parent check in the
  commit) off 1.09x (0.99-1.15), managed 1.03x (0.80-1.17); *before* 0.93x / 0.96x and 0.96x / 0.92x. A
  writer's 25 declares: 0.16 / 0.12 CPU-s against the reference's 0.33 / 0.24.
- What is left in a declare: the `.lance-reserved` marker (~1.1 ms), the read of the commits of others since
  (a scan of the new fragments, ~1.3 ms: pylance's scanner), the offer and its answer (~0.9 ms of file work).
  The rest of a short-lived writer is its interpreter, `lance_namespace`'s import (both engines: ~0.9 s of CPU),
  pylance's import (~0.44 s, of which pandas ~0.3 s, imported by `pyarrow.dataset`) and the interpreter's
  finalisation (~0.3-0.4 s, mostly `lance_namespace`'s pydantic models): ~1.9 s of ~2.1 s, the same for both.
"""  # noqa: E501
