// The lancedb Node client against a Lance REST Namespace server, as a user's program would drive it.
//
// Usage: node scenarios.mjs '{"uri": "http://127.0.0.1:PORT", "token": "…", "namespace": "team"}'
// Prints one JSON line per scenario: {"scenario": name, "ok": true, "value": …} or {"ok": false, "error": …},
// and runs every scenario even when one fails (tests/clients/test_node.py checks the values).
import * as lancedb from "@lancedb/lancedb";

const config = JSON.parse(process.argv[2]);
const headers = config.token ? { Authorization: `Bearer ${config.token}` } : {};
const ns = [config.namespace];

function report(scenario, outcome) {
  process.stdout.write(`${JSON.stringify({ scenario, ...outcome })}\n`);
}

async function run(scenario, body) {
  try {
    const value = await body();
    report(scenario, { ok: true, value: value === undefined ? null : value });
  } catch (error) {
    report(scenario, { ok: false, error: String(error && error.message ? error.message : error) });
  }
}

// rows with a 4-dimensional vector each: the vector column makes vectorSearch possible
const rows = (ids) => ids.map((id) => ({ id, name: `n${id}`, vector: [id, id + 0.5, 1, 0] }));
const ids = (records) => records.map((record) => Number(record.id)).sort((a, b) => a - b);

const db = await lancedb.connectNamespace("rest", { uri: config.uri, headers });
let table;
let firstVersion;

await run("create_namespace", async () => {
  await db.createNamespace(ns);
  return (await db.listNamespaces()).namespaces;
});
await run("create_table_from_rows", async () => {
  table = await db.createTable("items", rows([1, 2, 3]), ns);
  firstVersion = await table.version();
  return { rows: await table.countRows(), version: firstVersion };
});
await run("list_tables", async () => db.tableNames(ns));
await run("add", async () => {
  await table.add(rows([4, 5]));
  return { rows: await table.countRows(), version: await table.version() };
});
await run("vector_search", async () => {
  const found = await table.vectorSearch([4.2, 4.7, 1, 0]).limit(2).toArray();
  return ids(found);
});
await run("filter_query", async () => {
  const found = await table.query().where("id >= 3").select(["id", "name"]).toArray();
  return ids(found);
});
await run("update", async () => {
  await table.update({ where: "id = 2", values: { name: "two" } });
  const found = await table.query().where("id = 2").toArray();
  return found.map((record) => record.name);
});
await run("delete", async () => {
  await table.delete("id = 1");
  return { rows: await table.countRows(), version: await table.version() };
});
await run("list_versions", async () => (await table.listVersions()).map((version) => Number(version.version)));
await run("checkout_older_version", async () => {
  const reopened = await db.openTable("items", ns);
  await reopened.checkout(firstVersion);
  const old = ids(await reopened.query().toArray());
  await reopened.checkoutLatest();
  return { old, latest: ids(await reopened.query().toArray()) };
});
await run("drop_table", async () => {
  await db.dropTable("items", ns);
  return db.tableNames(ns);
});
await run("drop_namespace", async () => {
  await db.dropNamespace(ns);
  return (await db.listNamespaces()).namespaces;
});
