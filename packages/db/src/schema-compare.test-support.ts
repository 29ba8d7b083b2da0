import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import prismaSchemaWasm from "@prisma/prisma-schema-wasm";
import type { ClientBase } from "pg";

/**
 * Test support for schema-match.int.test.ts: proves that a migrated database
 * holds exactly what prisma/schema.prisma declares. Our migrations are
 * hand-written SQL (Prisma's schema engine cannot run offline), so nothing
 * else keeps the two in step.
 *
 * Expected side: the DMMF from Prisma's own schema parser (the wasm build of
 * prisma-fmt), turned into the DDL that `prisma migrate` would write (types,
 * defaults, default constraint names, referential actions). PostgreSQL then
 * canonicalises those type and default spellings in temporary tables, so both
 * sides are compared in the same notation (`format_type`, `pg_get_expr`)
 * instead of in a guessed one.
 *
 * Actual side: pg_catalog. Partitions (relispartition) and `_prisma_migrations`
 * are skipped; partitioned parents are compared like plain tables. CHECK
 * constraints and triggers are outside what Prisma models, so they are not
 * compared.
 *
 * The parser is the npm package @prisma/prisma-schema-wasm (root
 * devDependency). prisma 7.10.1 bundles build 8.1.0-1.d1b3f377, which is not
 * published; the pinned 8.1.0-2.59be4fda is the next build of the same line and
 * gave a byte-identical DMMF datamodel for our schema when checked against the
 * CLI's bundled wasm. Bump the pin together with prisma.
 *
 * Not exported from the package index: only tests use it.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
/** prisma/schema.prisma, from packages/db/{src,dist}. */
export const defaultSchemaPath = path.resolve(here, "../../../prisma/schema.prisma");

/** PostgreSQL's NAMEDATALEN - 1: the longest identifier, in bytes. */
const MAX_IDENTIFIER_BYTES = 63;

// ---------------------------------------------------------------------------
// The shape both sides are reduced to.

export interface ColumnShape {
  name: string;
  /** `format_type()` spelling, e.g. `timestamp(3) with time zone`, `text[]`. */
  type: string;
  notNull: boolean;
  /** `pg_get_expr()` spelling of the default, or null. */
  default: string | null;
  /** Sequence owned by the column (what SERIAL creates), as `name AS type`. */
  ownedSequence: string | null;
  /** pg_attribute.attidentity / attgenerated; Prisma never creates either. */
  identity: string | null;
  generated: string | null;
}

export type IndexKind = "primary key" | "unique index" | "unique constraint" | "exclusion constraint" | "index";

export interface IndexColumnShape {
  /** Column name, or `(expression)` for an expression column. */
  column: string;
  descending: boolean;
  nullsFirst: boolean;
  /**
   * Operator class. Expected side: the name from schema.prisma (Prisma's
   * `InetOps` or a raw `inet_ops`), or null for the type's default. Actual
   * side: the catalog name and whether it is the default for the column type.
   */
  opclass: string | null;
  opclassIsDefault: boolean;
}

export interface IndexShape {
  name: string;
  kind: IndexKind;
  /** pg_am.amname: btree, gist, gin, hash, spgist, brin. */
  method: string;
  columns: IndexColumnShape[];
  /** INCLUDE columns, partial-index predicate and other things Prisma never creates. */
  include: string[];
  predicate: string | null;
  nullsNotDistinct: boolean;
  valid: boolean;
}

export interface ForeignKeyShape {
  name: string;
  columns: string[];
  referencedTable: string;
  referencedColumns: string[];
  onDelete: string;
  onUpdate: string;
  /** Non-default options (MATCH FULL, DEFERRABLE, NOT VALID), which Prisma never writes. */
  options: string[];
}

export interface TableShape {
  name: string;
  columns: Map<string, ColumnShape>;
  indexes: Map<string, IndexShape>;
  foreignKeys: Map<string, ForeignKeyShape>;
}

export type SchemaShape = Map<string, TableShape>;

export interface SchemaComparison {
  /** Human-readable, sorted; empty when the database matches. */
  differences: string[];
  /** How much the expected side held, so a test can tell a real pass from an empty comparison. */
  compared: { tables: number; columns: number; primaryKeys: number; uniqueIndexes: number; indexes: number; foreignKeys: number };
}

// ---------------------------------------------------------------------------
// Reading the DMMF without `any`: every value is checked as it is read, so a
// DMMF format change fails loudly instead of comparing nothing.

type DmmfDefault = string | number | boolean | DmmfDefault[] | { name: string; args: unknown[] };

interface DmmfField {
  name: string;
  dbName: string | null;
  kind: string;
  type: string;
  nativeType: { name: string; args: string[] } | null;
  isRequired: boolean;
  isList: boolean;
  default: DmmfDefault | undefined;
  relationFromFields: string[];
  relationToFields: string[];
  relationOnDelete: string | null;
  relationOnUpdate: string | null;
}

interface DmmfModel {
  name: string;
  dbName: string | null;
  schema: string | null;
  fields: DmmfField[];
}

interface DmmfIndex {
  model: string;
  type: string;
  dbName: string | null;
  algorithm: string | null;
  fields: { name: string; sortOrder: string | null; operatorClass: string | null }[];
}

interface Dmmf {
  models: DmmfModel[];
  indexes: DmmfIndex[];
  enums: unknown[];
  types: unknown[];
}

function fail(at: string, expected: string): never {
  throw new Error(`Unexpected DMMF shape at ${at}: expected ${expected}`);
}

function asObject(value: unknown, at: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(at, "an object");
  return value as Record<string, unknown>;
}

function asArray(value: unknown, at: string): unknown[] {
  if (!Array.isArray(value)) fail(at, "an array");
  return value;
}

function asString(value: unknown, at: string): string {
  if (typeof value !== "string") fail(at, "a string");
  return value;
}

function asBoolean(value: unknown, at: string): boolean {
  if (typeof value !== "boolean") fail(at, "a boolean");
  return value;
}

function optionalString(value: unknown, at: string): string | null {
  return value === undefined || value === null ? null : asString(value, at);
}

function asDefault(value: unknown, at: string): DmmfDefault {
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return value;
  if (Array.isArray(value)) return value.map((v, i) => asDefault(v, `${at}[${i}]`));
  const obj = asObject(value, at);
  return { name: asString(obj.name, `${at}.name`), args: asArray(obj.args, `${at}.args`) };
}

function readField(value: unknown, at: string): DmmfField {
  const f = asObject(value, at);
  let nativeType: DmmfField["nativeType"] = null;
  if (f.nativeType !== undefined && f.nativeType !== null) {
    const [name, args] = asArray(f.nativeType, `${at}.nativeType`);
    nativeType = {
      name: asString(name, `${at}.nativeType[0]`),
      args: asArray(args, `${at}.nativeType[1]`).map((a, i) => asString(a, `${at}.nativeType[1][${i}]`)),
    };
  }
  const names = (key: string): string[] =>
    f[key] === undefined ? [] : asArray(f[key], `${at}.${key}`).map((n, i) => asString(n, `${at}.${key}[${i}]`));
  return {
    name: asString(f.name, `${at}.name`),
    dbName: optionalString(f.dbName, `${at}.dbName`),
    kind: asString(f.kind, `${at}.kind`),
    type: asString(f.type, `${at}.type`),
    nativeType,
    isRequired: asBoolean(f.isRequired, `${at}.isRequired`),
    isList: asBoolean(f.isList, `${at}.isList`),
    default: f.default === undefined ? undefined : asDefault(f.default, `${at}.default`),
    relationFromFields: names("relationFromFields"),
    relationToFields: names("relationToFields"),
    relationOnDelete: optionalString(f.relationOnDelete, `${at}.relationOnDelete`),
    relationOnUpdate: optionalString(f.relationOnUpdate, `${at}.relationOnUpdate`),
  };
}

function readDmmf(json: string): Dmmf {
  const datamodel = asObject(asObject(JSON.parse(json) as unknown, "dmmf").datamodel, "datamodel");
  const models = asArray(datamodel.models, "models").map((value, i): DmmfModel => {
    const m = asObject(value, `models[${i}]`);
    return {
      name: asString(m.name, `models[${i}].name`),
      dbName: optionalString(m.dbName, `models[${i}].dbName`),
      schema: optionalString(m.schema, `models[${i}].schema`),
      fields: asArray(m.fields, `models[${i}].fields`).map((f, j) => readField(f, `models[${i}].fields[${j}]`)),
    };
  });
  const indexes = asArray(datamodel.indexes, "indexes").map((value, i): DmmfIndex => {
    const x = asObject(value, `indexes[${i}]`);
    return {
      model: asString(x.model, `indexes[${i}].model`),
      type: asString(x.type, `indexes[${i}].type`),
      dbName: optionalString(x.dbName, `indexes[${i}].dbName`),
      algorithm: optionalString(x.algorithm, `indexes[${i}].algorithm`),
      fields: asArray(x.fields, `indexes[${i}].fields`).map((fv, j) => {
        const f = asObject(fv, `indexes[${i}].fields[${j}]`);
        return {
          name: asString(f.name, `indexes[${i}].fields[${j}].name`),
          sortOrder: optionalString(f.sortOrder, `indexes[${i}].fields[${j}].sortOrder`),
          operatorClass: optionalString(f.operatorClass, `indexes[${i}].fields[${j}].operatorClass`),
        };
      }),
    };
  });
  return { models, indexes, enums: asArray(datamodel.enums, "enums"), types: asArray(datamodel.types, "types") };
}

// ---------------------------------------------------------------------------
// schema.prisma -> the DDL `prisma migrate` would write.

/** A column as Prisma would declare it: SQL spellings not yet canonicalised. */
interface ExpectedColumnSql {
  name: string;
  typeSql: string;
  notNull: boolean;
  /** Default as Prisma renders it (`'user'`, `CURRENT_TIMESTAMP`), or null. */
  defaultSql: string | null;
  /** SERIAL/BIGSERIAL: the default and owned sequence are derived after canonicalisation. */
  autoincrement: boolean;
}

interface ExpectedTableSql {
  name: string;
  columns: ExpectedColumnSql[];
  indexes: IndexShape[];
  foreignKeys: ForeignKeyShape[];
}

export interface ExpectedSchemaSql {
  tables: ExpectedTableSql[];
}

/** The part of the schema source the DMMF does not carry; refuse it rather than compare it wrongly. */
function assertSupportedSource(source: string): void {
  const withoutComments = source.replace(/\/\/.*$/gm, "");
  const unsupported: [RegExp, string][] = [
    [/@relation\([^)]*\bmap\s*:/, "@relation(map: ...) (the DMMF does not carry foreign key names)"],
    [/@@?ignore\b/, "@ignore / @@ignore (ignored objects are left out of the DMMF)"],
    [/\bUnsupported\s*\(/, "Unsupported(...) types (left out of the DMMF)"],
    [/\brelationMode\b/, "relationMode (changes which foreign keys exist)"],
  ];
  for (const [pattern, what] of unsupported) {
    if (pattern.test(withoutComments)) {
      throw new Error(`schema.prisma uses ${what}; extend schema-compare.test-support.ts before relying on it`);
    }
  }
}

/**
 * `where: raw("...")` of each @@index / @@unique (preview feature
 * partialIndexes), by index name: the DMMF does not carry it. An index with
 * a predicate must be named with `map:` so the two can be matched.
 */
function rawIndexPredicates(source: string): Map<string, string> {
  const predicates = new Map<string, string>();
  const withoutComments = source.replace(/\/\/.*$/gm, "");
  for (const attribute of withoutComments.match(/@@(?:index|unique)\((?:[^()"]|"(?:[^"\\]|\\.)*"|\((?:[^()"]|"(?:[^"\\]|\\.)*")*\))*\)/g) ?? []) {
    const where = /\bwhere\s*:\s*raw\(\s*"((?:[^"\\]|\\.)*)"\s*\)/.exec(attribute);
    if (!where) continue;
    const name = /\bmap\s*:\s*"([^"]+)"/.exec(attribute)?.[1];
    if (name === undefined) throw new Error(`schema.prisma: a partial index needs map: "name" to be compared (${attribute})`);
    predicates.set(name, JSON.parse(`"${where[1] ?? ""}"`) as string);
  }
  return predicates;
}

/** Prisma's scalar type -> native type when no @db attribute is given (PostgreSQL connector). */
const DEFAULT_NATIVE_TYPE: Record<string, { name: string; args: string[] }> = {
  String: { name: "Text", args: [] },
  Int: { name: "Integer", args: [] },
  BigInt: { name: "BigInt", args: [] },
  Float: { name: "DoublePrecision", args: [] },
  Decimal: { name: "Decimal", args: ["65", "30"] },
  Boolean: { name: "Boolean", args: [] },
  DateTime: { name: "Timestamp", args: ["3"] },
  Json: { name: "JsonB", args: [] },
  Bytes: { name: "ByteA", args: [] },
};

/** Native type -> SQL, following Prisma's postgres renderer (render_column_type_postgres). */
function renderNativeType(native: { name: string; args: string[] }, autoincrement: boolean, at: string): string {
  const args = native.args.length > 0 ? `(${native.args.join(",")})` : "";
  const plain: Record<string, string> = {
    Citext: "CITEXT",
    Oid: "OID",
    Inet: "INET",
    Money: "MONEY",
    Real: "REAL",
    DoublePrecision: "DOUBLE PRECISION",
    Text: "TEXT",
    ByteA: "BYTEA",
    Date: "DATE",
    Boolean: "BOOLEAN",
    Uuid: "UUID",
    Xml: "XML",
    Json: "JSON",
    JsonB: "JSONB",
  };
  const withArgs: Record<string, string> = {
    Decimal: "DECIMAL",
    VarChar: "VARCHAR",
    Char: "CHAR",
    Timestamp: "TIMESTAMP",
    Timestamptz: "TIMESTAMPTZ",
    Time: "TIME",
    Timetz: "TIMETZ",
    Bit: "BIT",
    VarBit: "VARBIT",
  };
  // Autoincrement columns get INTEGER/BIGINT/SMALLINT here: SERIAL is the same
  // type plus an owned sequence and a nextval() default, checked separately.
  const integers: Record<string, string> = { SmallInt: "SMALLINT", Integer: "INTEGER", BigInt: "BIGINT" };
  const integer = integers[native.name];
  if (integer !== undefined) return integer;
  if (autoincrement) throw new Error(`${at}: autoincrement() on ${native.name} is not something Prisma migrate renders`);
  const simple = plain[native.name];
  if (simple !== undefined) return simple;
  const parameterised = withArgs[native.name];
  if (parameterised !== undefined) return `${parameterised}${args}`;
  throw new Error(`${at}: native type @db.${native.name} is not mapped in schema-compare.test-support.ts`);
}

function quoteLiteral(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** Identifier as PostgreSQL prints it (quote_ident), for the regclass inside nextval(). */
function quoteIdent(name: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

/** Cuts a string to at most `bytes` UTF-8 bytes without splitting a character. */
function clipBytes(value: string, bytes: number): string {
  let out = "";
  let used = 0;
  for (const ch of value) {
    const size = Buffer.byteLength(ch);
    if (used + size > bytes) break;
    out += ch;
    used += size;
  }
  return out;
}

/**
 * Prisma's default constraint/index names (psl ConstraintNames): table and
 * column db names joined with `_`, cut so the whole fits 63 bytes, plus the suffix.
 */
function prismaConstraintName(table: string, columns: string[], suffix: "_pkey" | "_key" | "_idx" | "_fkey"): string {
  const base = columns.length > 0 ? `${table}_${columns.join("_")}` : table;
  const limit = MAX_IDENTIFIER_BYTES - suffix.length;
  return `${Buffer.byteLength(base) >= limit ? clipBytes(base, limit) : base}${suffix}`;
}

/** The sequence name SERIAL gets (PostgreSQL's makeObjectName(table, column, "seq")). */
function serialSequenceName(table: string, column: string): string {
  const available = MAX_IDENTIFIER_BYTES - "seq".length - 2;
  let tableBytes = Buffer.byteLength(table);
  let columnBytes = Buffer.byteLength(column);
  while (tableBytes + columnBytes > available) {
    if (tableBytes > columnBytes) tableBytes--;
    else columnBytes--;
  }
  return `${clipBytes(table, tableBytes)}_${clipBytes(column, columnBytes)}_seq`;
}

/** A literal default as Prisma's renderer writes it (render_default / render_constant_default). */
function renderDefaultValue(value: DmmfDefault, scalarType: string, fullTypeSql: string, at: string): string {
  if (Array.isArray(value)) {
    return `ARRAY[${value.map((v, i) => renderDefaultValue(v, scalarType, fullTypeSql, `${at}[${i}]`)).join(", ")}]::${fullTypeSql}`;
  }
  if (typeof value === "object") throw new Error(`${at}: unexpected function default inside a list`);
  switch (scalarType) {
    case "Int":
    case "BigInt":
    case "Float":
    case "Decimal": {
      const text = String(value);
      // Numbers are spliced into SQL unquoted, as Prisma does; refuse anything else.
      if (!/^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(text)) throw new Error(`${at}: not a number: ${text}`);
      return text;
    }
    case "Boolean":
      return String(value);
    case "Bytes":
      return quoteLiteral(`\\x${Buffer.from(String(value), "base64").toString("hex")}`);
    default:
      return quoteLiteral(String(value));
  }
}

/** Client-side generators: Prisma fills them in, the column gets no DEFAULT. */
const CLIENT_SIDE_DEFAULTS = new Set(["uuid", "cuid", "nanoid", "ulid"]);

function expectedColumn(field: DmmfField, at: string): ExpectedColumnSql {
  if (field.kind !== "scalar") throw new Error(`${at}: ${field.kind} fields (${field.type}) are not supported yet`);
  const fn = field.default !== undefined && typeof field.default === "object" && !Array.isArray(field.default) ? field.default : null;
  const autoincrement = fn?.name === "autoincrement";
  const native = field.nativeType ?? DEFAULT_NATIVE_TYPE[field.type];
  if (native === undefined) throw new Error(`${at}: Prisma type ${field.type} is not mapped`);
  const typeSql = `${renderNativeType(native, autoincrement, at)}${field.isList ? "[]" : ""}`;

  let defaultSql: string | null = null;
  if (fn !== null) {
    if (fn.name === "now") defaultSql = "CURRENT_TIMESTAMP";
    else if (fn.name === "dbgenerated") defaultSql = fn.args.length > 0 ? asString(fn.args[0], `${at}.default.args[0]`) : null;
    else if (fn.name !== "autoincrement" && !CLIENT_SIDE_DEFAULTS.has(fn.name)) {
      throw new Error(`${at}: default function ${fn.name}() is not supported on PostgreSQL`);
    }
  } else if (field.default !== undefined) {
    defaultSql = renderDefaultValue(field.default, field.type, typeSql, `${at}.default`);
  }

  return {
    name: field.dbName ?? field.name,
    typeSql,
    // Prisma renders NOT NULL only for required non-list fields; lists stay nullable.
    notNull: field.isRequired && !field.isList,
    defaultSql,
    autoincrement,
  };
}

/** Prisma's operator class names -> PostgreSQL's, for messages only (comparison uses opclassKey). */
function opclassDisplayName(name: string): string {
  if (name.includes("_") || name === name.toLowerCase()) return name;
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/min_max/g, "minmax")
    .replace(/timestamp_tz/g, "timestamptz")
    .replace(/time_tz/g, "timetz")
    .replace(/var_bit/g, "varbit");
}

/**
 * Prisma's `InetOps`, `DateMinMaxMultiOps`, `TimestampTzBloomOps` are the
 * catalog names `inet_ops`, `date_minmax_multi_ops`, `timestamptz_bloom_ops`
 * (sql-schema-describer's SQLOperatorClassKind) without underscores and case;
 * raw(...) names arrive verbatim. One key covers both.
 */
function opclassKey(name: string): string {
  return name.replace(/_/g, "").toLowerCase();
}

const REFERENTIAL_ACTIONS: Record<string, string> = {
  Cascade: "CASCADE",
  Restrict: "RESTRICT",
  NoAction: "NO ACTION",
  SetNull: "SET NULL",
  SetDefault: "SET DEFAULT",
};

function referentialAction(action: string, at: string): string {
  const sql = REFERENTIAL_ACTIONS[action];
  if (sql === undefined) throw new Error(`${at}: unknown referential action ${action}`);
  return sql;
}

/** Parses schema.prisma with Prisma's own parser and renders what `prisma migrate` would create. */
export async function expectedSchemaFromPrisma(schemaPath = defaultSchemaPath): Promise<ExpectedSchemaSql> {
  const source = await readFile(schemaPath, "utf8");
  assertSupportedSource(source);
  const dmmf = readDmmf(prismaSchemaWasm.get_dmmf(JSON.stringify({ prismaSchema: source })));
  if (dmmf.enums.length > 0) throw new Error("schema.prisma declares enums; extend schema-compare.test-support.ts to compare them");
  if (dmmf.types.length > 0) throw new Error("schema.prisma declares composite types, which PostgreSQL does not support");

  const rawPredicates = rawIndexPredicates(source);
  const models = new Map(dmmf.models.map((m) => [m.name, m]));
  const tableOf = (model: DmmfModel): string => model.dbName ?? model.name;
  const columnOf = (model: DmmfModel, fieldName: string, at: string): string => {
    const field = model.fields.find((f) => f.name === fieldName);
    if (field === undefined) throw new Error(`${at}: model ${model.name} has no field ${fieldName}`);
    return field.dbName ?? field.name;
  };

  const tables = dmmf.models.map((model): ExpectedTableSql => {
    const at = `model ${model.name}`;
    if (model.schema !== null) throw new Error(`${at}: multiSchema is not supported`);
    const table = tableOf(model);
    const columns = model.fields
      .filter((f) => f.kind !== "object")
      .map((f) => expectedColumn(f, `${at}.${f.name}`));

    const indexes = dmmf.indexes
      .filter((x) => x.model === model.name)
      .map((x, i): IndexShape => {
        const ixAt = `${at} index #${i}`;
        const kinds: Record<string, [IndexKind, "_pkey" | "_key" | "_idx"]> = {
          id: ["primary key", "_pkey"],
          unique: ["unique index", "_key"],
          normal: ["index", "_idx"],
        };
        const kind = kinds[x.type];
        if (kind === undefined) throw new Error(`${ixAt}: index type ${x.type} is not supported on PostgreSQL`);
        const indexColumns = x.fields.map((f): IndexColumnShape => {
          const descending = f.sortOrder === "desc";
          return {
            column: columnOf(model, f.name, ixAt),
            descending,
            // Prisma cannot ask for NULLS FIRST/LAST, so PostgreSQL's default applies.
            nullsFirst: descending,
            opclass: f.operatorClass,
            opclassIsDefault: f.operatorClass === null,
          };
        });
        const columnNames = indexColumns.map((c) => c.column);
        const name = x.dbName ?? prismaConstraintName(table, kind[1] === "_pkey" ? [] : columnNames, kind[1]);
        return {
          name,
          kind: kind[0],
          // Prisma's algorithm names (BTree, Hash, Gist, Gin, SpGist, Brin) are pg_am names in lower case.
          method: (x.algorithm ?? "BTree").toLowerCase(),
          columns: indexColumns,
          include: [],
          // As written in schema.prisma; canonicalize() replaces it by PostgreSQL's rendering.
          predicate: rawPredicates.get(name) ?? null,
          nullsNotDistinct: false,
          valid: true,
        };
      });

    const foreignKeys = model.fields
      .filter((f) => f.kind === "object" && f.relationFromFields.length > 0)
      .map((f): ForeignKeyShape => {
        const fkAt = `${at}.${f.name}`;
        const target = models.get(f.type);
        if (target === undefined) throw new Error(`${fkAt}: unknown model ${f.type}`);
        const fkColumns = f.relationFromFields.map((n) => columnOf(model, n, fkAt));
        return {
          name: prismaConstraintName(table, fkColumns, "_fkey"),
          columns: fkColumns,
          referencedTable: tableOf(target),
          referencedColumns: f.relationToFields.map((n) => columnOf(target, n, fkAt)),
          // Prisma's defaults: Restrict for a required relation, SetNull for an optional one; Cascade on update.
          onDelete: referentialAction(f.relationOnDelete ?? (f.isRequired ? "Restrict" : "SetNull"), fkAt),
          onUpdate: referentialAction(f.relationOnUpdate ?? "Cascade", fkAt),
          options: [],
        };
      });

    // Implicit many-to-many relations live in a join table Prisma creates on its own.
    for (const f of model.fields) {
      if (f.kind !== "object" || !f.isList) continue;
      const target = models.get(f.type);
      const back = target?.fields.find((b) => b.kind === "object" && b.type === model.name && b.isList);
      if (back !== undefined && f.relationFromFields.length === 0 && back.relationFromFields.length === 0) {
        throw new Error(`${at}.${f.name}: implicit many-to-many relations are not supported yet`);
      }
    }

    return { name: table, columns, indexes, foreignKeys };
  });

  const named = new Set(tables.flatMap((t) => t.indexes.map((x) => x.name)));
  for (const name of rawPredicates.keys()) {
    if (!named.has(name)) throw new Error(`schema.prisma: where: raw(...) on "${name}", which is no index the DMMF knows`);
  }
  return { tables };
}

// ---------------------------------------------------------------------------
// Canonicalisation: let PostgreSQL spell the expected types and defaults.

interface CanonicalRow {
  table_name: string;
  column_name: string;
  type: string;
  default_expr: string | null;
}

/**
 * Creates one temporary table per expected table, with the expected column
 * types and defaults, and reads back `format_type` and `pg_get_expr`. Works
 * inside the caller's transaction too (the negative controls roll back).
 */
async function canonicalize(client: ClientBase, expected: ExpectedSchemaSql): Promise<SchemaShape> {
  const prefix = `roost_expected_${randomBytes(4).toString("hex")}_`;
  const tempName = (i: number): string => `${prefix}${i}`;
  const ddl = expected.tables
    .map((table, i) => {
      const columns = table.columns.map(
        (c) => `"${c.name.replace(/"/g, '""')}" ${c.typeSql}${c.defaultSql === null ? "" : ` DEFAULT ${c.defaultSql}`}`,
      );
      return `CREATE TEMPORARY TABLE "${tempName(i)}" (${columns.join(", ")});`;
    })
    .join("\n");

  // One simple-protocol query: the CREATEs all succeed or none are left behind.
  try {
    await client.query(ddl);
  } catch (error) {
    throw new Error(`PostgreSQL refused the DDL derived from schema.prisma: ${(error as Error).message}\n${ddl}`);
  }
  const drop = `DROP TABLE ${expected.tables.map((_, i) => `pg_temp."${tempName(i)}"`).join(", ")}`;
  // Partial-index predicates as PostgreSQL renders them: built on the temporary tables and read back.
  const partial = expected.tables.flatMap((table, i) =>
    table.indexes.flatMap((x, k) => (x.predicate === null ? [] : [{ table: i, index: x, tempIndex: `${prefix}${i}_ix${k}` }])),
  );
  let predicates = new Map<string, string>();
  if (partial.length > 0) {
    try {
      await client.query(
        partial
          .map((p) => `CREATE INDEX "${p.tempIndex}" ON pg_temp."${tempName(p.table)}" ("${(p.index.columns[0]?.column ?? "").replace(/"/g, '""')}") WHERE ${p.index.predicate};`)
          .join("\n"),
      );
      const { rows: read } = await client.query<{ name: string; predicate: string }>(
        `SELECT c.relname AS name, pg_get_expr(x.indpred, x.indrelid) AS predicate
           FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid
          WHERE c.relnamespace = pg_my_temp_schema() AND c.relname LIKE $1`,
        [`${prefix}%`],
      );
      predicates = new Map(read.map((r) => [r.name, r.predicate]));
    } catch (error) {
      await client.query(drop).catch(() => undefined);
      throw new Error(`PostgreSQL refused a partial-index predicate from schema.prisma: ${(error as Error).message}`);
    }
  }
  const canonicalPredicate = new Map(partial.map((p) => [p.index, predicates.get(p.tempIndex) ?? null]));
  let rows: CanonicalRow[];
  try {
    ({ rows } = await client.query<CanonicalRow>(
      `SELECT c.relname AS table_name, a.attname AS column_name,
              format_type(a.atttypid, a.atttypmod) AS type,
              pg_get_expr(d.adbin, d.adrelid) AS default_expr
         FROM pg_class c
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
         LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
        WHERE c.relnamespace = pg_my_temp_schema() AND c.relname LIKE $1`,
      [`${prefix}%`],
    ));
  } catch (error) {
    // Best effort only: inside a failed transaction the DROP fails too, and the
    // caller's ROLLBACK removes the tables; the first error is the one to see.
    await client.query(drop).catch(() => undefined);
    throw error;
  }
  await client.query(drop);

  const canonical = new Map(rows.map((r) => [`${r.table_name}\u0000${r.column_name}`, r]));
  const shape: SchemaShape = new Map();
  expected.tables.forEach((table, i) => {
    const columns = new Map<string, ColumnShape>();
    for (const c of table.columns) {
      const row = canonical.get(`${tempName(i)}\u0000${c.name}`);
      if (row === undefined) throw new Error(`canonicalisation lost column ${table.name}.${c.name}`);
      const sequence = c.autoincrement ? serialSequenceName(table.name, c.name) : null;
      columns.set(c.name, {
        name: c.name,
        type: row.type,
        notNull: c.notNull || c.autoincrement,
        default: sequence === null ? row.default_expr : `nextval('${quoteIdent(sequence)}'::regclass)`,
        ownedSequence: sequence === null ? null : `${sequence} AS ${row.type}`,
        identity: null,
        generated: null,
      });
    }
    shape.set(table.name, {
      name: table.name,
      columns,
      indexes: new Map(table.indexes.map((x) => [x.name, x.predicate === null ? x : { ...x, predicate: canonicalPredicate.get(x) ?? null }])),
      foreignKeys: new Map(table.foreignKeys.map((fk) => [fk.name, fk])),
    });
  });
  return shape;
}

// ---------------------------------------------------------------------------
// The database as it is.

interface TableRow {
  table_name: string;
}

interface ColumnRow {
  table_name: string;
  column_name: string;
  type: string;
  not_null: boolean;
  default_expr: string | null;
  owned_sequence: string | null;
  identity: string | null;
  generated: string | null;
}

interface IndexRow {
  table_name: string;
  index_name: string;
  method: string;
  is_primary: boolean;
  is_unique: boolean;
  is_valid: boolean;
  nulls_not_distinct: boolean;
  constraint_type: string | null;
  predicate: string | null;
  key_count: number;
  columns: string[];
  options: number[];
  opclasses: string[];
  opclass_defaults: boolean[];
}

interface ForeignKeyRow {
  table_name: string;
  name: string;
  referenced_table: string;
  columns: string[];
  referenced_columns: string[];
  on_delete: string;
  on_update: string;
  match_type: string;
  deferrable: boolean;
  deferred: boolean;
  validated: boolean;
}

/** Tables of the schema: plain and partitioned parents, never partitions or Prisma's bookkeeping table. */
const TABLES_CTE = `
  WITH tables AS (
    SELECT c.oid, c.relname
      FROM pg_class c
     WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1)
       AND c.relkind IN ('r', 'p')
       AND NOT c.relispartition
       AND c.relname <> '_prisma_migrations'
  )`;

const FK_ACTIONS: Record<string, string> = { a: "NO ACTION", r: "RESTRICT", c: "CASCADE", n: "SET NULL", d: "SET DEFAULT" };

function actionName(code: string): string {
  return FK_ACTIONS[code] ?? `unknown action ${code}`;
}

/** Reads tables, columns, indexes and foreign keys of one schema from pg_catalog. */
export async function introspectDatabase(client: ClientBase, schema = "public"): Promise<SchemaShape> {
  const tables = await client.query<TableRow>(`${TABLES_CTE} SELECT relname AS table_name FROM tables`, [schema]);
  const columns = await client.query<ColumnRow>(
    `${TABLES_CTE}
     SELECT t.relname AS table_name, a.attname AS column_name,
            format_type(a.atttypid, a.atttypmod) AS type,
            a.attnotnull AS not_null,
            pg_get_expr(d.adbin, d.adrelid) AS default_expr,
            NULLIF(a.attidentity::text, '') AS identity,
            NULLIF(a.attgenerated::text, '') AS generated,
            (SELECT string_agg(s.relname || ' AS ' || format_type(sq.seqtypid, NULL), ', ' ORDER BY s.relname)
               FROM pg_depend dep
               JOIN pg_class s ON s.oid = dep.objid AND s.relkind = 'S'
               JOIN pg_sequence sq ON sq.seqrelid = s.oid
              WHERE dep.classid = 'pg_class'::regclass AND dep.refclassid = 'pg_class'::regclass
                AND dep.refobjid = t.oid AND dep.refobjsubid = a.attnum AND dep.deptype = 'a') AS owned_sequence
       FROM tables t
       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
       LEFT JOIN pg_attrdef d ON d.adrelid = t.oid AND d.adnum = a.attnum`,
    [schema],
  );
  const indexes = await client.query<IndexRow>(
    `${TABLES_CTE}
     SELECT t.relname AS table_name, i.relname AS index_name, am.amname AS method,
            x.indisprimary AS is_primary, x.indisunique AS is_unique, x.indisvalid AS is_valid,
            x.indnullsnotdistinct AS nulls_not_distinct,
            (SELECT con.contype::text FROM pg_constraint con
              WHERE con.conindid = x.indexrelid AND con.conrelid = x.indrelid AND con.contype IN ('p', 'u', 'x')
              LIMIT 1) AS constraint_type,
            pg_get_expr(x.indpred, x.indrelid) AS predicate,
            x.indnkeyatts::int AS key_count,
            ARRAY(SELECT CASE WHEN x.indkey[k - 1] = 0
                              THEN '(' || pg_get_indexdef(x.indexrelid, k, true) || ')'
                              ELSE (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = x.indrelid AND a.attnum = x.indkey[k - 1])
                         END
                    FROM generate_series(1, x.indnatts::int) AS k ORDER BY k)::text[] AS columns,
            ARRAY(SELECT x.indoption[k - 1] FROM generate_series(1, x.indnkeyatts::int) AS k ORDER BY k)::int[] AS options,
            ARRAY(SELECT o.opcname FROM generate_series(1, x.indnkeyatts::int) AS k
                    JOIN pg_opclass o ON o.oid = x.indclass[k - 1] ORDER BY k)::text[] AS opclasses,
            ARRAY(SELECT o.opcdefault FROM generate_series(1, x.indnkeyatts::int) AS k
                    JOIN pg_opclass o ON o.oid = x.indclass[k - 1] ORDER BY k)::bool[] AS opclass_defaults
       FROM tables t
       JOIN pg_index x ON x.indrelid = t.oid
       JOIN pg_class i ON i.oid = x.indexrelid
       JOIN pg_am am ON am.oid = i.relam`,
    [schema],
  );
  const foreignKeys = await client.query<ForeignKeyRow>(
    `${TABLES_CTE}
     SELECT t.relname AS table_name, con.conname AS name,
            CASE WHEN rt.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1) THEN rt.relname::text
                 ELSE rt.relnamespace::regnamespace::text || '.' || rt.relname END AS referenced_table,
            ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, ord)
                    JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.ord)::text[] AS columns,
            ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY AS k(attnum, ord)
                    JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum ORDER BY k.ord)::text[] AS referenced_columns,
            con.confdeltype::text AS on_delete, con.confupdtype::text AS on_update, con.confmatchtype::text AS match_type,
            con.condeferrable AS deferrable, con.condeferred AS deferred, con.convalidated AS validated
       FROM tables t
       JOIN pg_constraint con ON con.conrelid = t.oid AND con.contype = 'f' AND con.conparentid = 0
       JOIN pg_class rt ON rt.oid = con.confrelid`,
    [schema],
  );

  const shape: SchemaShape = new Map();
  for (const { table_name } of tables.rows) {
    shape.set(table_name, { name: table_name, columns: new Map(), indexes: new Map(), foreignKeys: new Map() });
  }
  const tableOf = (name: string): TableShape => {
    const table = shape.get(name);
    if (table === undefined) throw new Error(`introspection found an object of unknown table ${name}`);
    return table;
  };

  for (const r of columns.rows) {
    tableOf(r.table_name).columns.set(r.column_name, {
      name: r.column_name,
      type: r.type,
      notNull: r.not_null,
      default: r.default_expr,
      ownedSequence: r.owned_sequence,
      identity: r.identity,
      generated: r.generated,
    });
  }

  for (const r of indexes.rows) {
    const kind: IndexKind = r.is_primary
      ? "primary key"
      : r.constraint_type === "u"
        ? "unique constraint"
        : r.constraint_type === "x"
          ? "exclusion constraint"
          : r.is_unique
            ? "unique index"
            : "index";
    const keyColumns = r.columns.slice(0, r.key_count).map((column, k): IndexColumnShape => {
      const option = r.options[k] ?? 0;
      return {
        column,
        // pg_index.indoption bits: 1 = DESC, 2 = NULLS FIRST.
        descending: (option & 1) !== 0,
        nullsFirst: (option & 2) !== 0,
        opclass: r.opclasses[k] ?? null,
        opclassIsDefault: r.opclass_defaults[k] ?? false,
      };
    });
    tableOf(r.table_name).indexes.set(r.index_name, {
      name: r.index_name,
      kind,
      method: r.method,
      columns: keyColumns,
      include: r.columns.slice(r.key_count),
      predicate: r.predicate,
      nullsNotDistinct: r.nulls_not_distinct,
      valid: r.is_valid,
    });
  }

  for (const r of foreignKeys.rows) {
    const options: string[] = [];
    if (r.match_type === "f") options.push("MATCH FULL");
    if (r.match_type === "p") options.push("MATCH PARTIAL");
    if (r.deferrable) options.push(r.deferred ? "DEFERRABLE INITIALLY DEFERRED" : "DEFERRABLE");
    if (!r.validated) options.push("NOT VALID");
    tableOf(r.table_name).foreignKeys.set(r.name, {
      name: r.name,
      columns: r.columns,
      referencedTable: r.referenced_table,
      referencedColumns: r.referenced_columns,
      onDelete: actionName(r.on_delete),
      onUpdate: actionName(r.on_update),
      options,
    });
  }
  return shape;
}

// ---------------------------------------------------------------------------
// Comparison.

const q = (name: string): string => `"${name}"`;

function describeIndexColumn(c: IndexColumnShape): string {
  let text = q(c.column);
  if (c.opclass !== null && !c.opclassIsDefault) text += ` ${opclassDisplayName(c.opclass)}`;
  if (c.descending) text += " DESC";
  if (c.nullsFirst !== c.descending) text += c.nullsFirst ? " NULLS FIRST" : " NULLS LAST";
  return text;
}

function describeIndex(x: IndexShape): string {
  let text = `${x.kind} USING ${x.method} (${x.columns.map(describeIndexColumn).join(", ")})`;
  if (x.include.length > 0) text += ` INCLUDE (${x.include.map(q).join(", ")})`;
  if (x.nullsNotDistinct) text += " NULLS NOT DISTINCT";
  if (x.predicate !== null) text += ` WHERE ${x.predicate}`;
  if (!x.valid) text += " (INVALID)";
  return text;
}

/** Expected opclass null means "the type's default"; otherwise the names must agree. */
function opclassMatches(expected: IndexColumnShape, actual: IndexColumnShape): boolean {
  if (expected.opclass === null) return actual.opclassIsDefault;
  return actual.opclass !== null && opclassKey(expected.opclass) === opclassKey(actual.opclass);
}

function indexesMatch(expected: IndexShape, actual: IndexShape): boolean {
  return (
    expected.kind === actual.kind &&
    expected.method === actual.method &&
    expected.columns.length === actual.columns.length &&
    expected.columns.every((e, k) => {
      const a = actual.columns[k];
      return (
        a !== undefined &&
        e.column === a.column &&
        e.descending === a.descending &&
        e.nullsFirst === a.nullsFirst &&
        opclassMatches(e, a)
      );
    }) &&
    expected.include.join("\u0000") === actual.include.join("\u0000") &&
    expected.predicate === actual.predicate &&
    expected.nullsNotDistinct === actual.nullsNotDistinct &&
    expected.valid === actual.valid
  );
}

function describeForeignKey(fk: ForeignKeyShape): string {
  return [
    `FOREIGN KEY (${fk.columns.map(q).join(", ")}) REFERENCES ${q(fk.referencedTable)} (${fk.referencedColumns.map(q).join(", ")})`,
    `ON DELETE ${fk.onDelete} ON UPDATE ${fk.onUpdate}`,
    ...fk.options,
  ].join(" ");
}

const show = (value: string | null): string => value ?? "none";

function diffColumns(table: string, expected: TableShape, actual: TableShape, out: string[]): void {
  for (const [name, e] of expected.columns) {
    const at = `column ${q(table)}.${q(name)}`;
    const a = actual.columns.get(name);
    if (a === undefined) {
      out.push(`${at}: missing from the database (expected ${e.type}${e.notNull ? " NOT NULL" : ""})`);
      continue;
    }
    if (e.type !== a.type) out.push(`${at}: type expected ${e.type}, found ${a.type}`);
    if (e.notNull !== a.notNull) {
      out.push(`${at}: expected ${e.notNull ? "NOT NULL" : "nullable"}, found ${a.notNull ? "NOT NULL" : "nullable"}`);
    }
    if (e.default !== a.default) out.push(`${at}: default expected ${show(e.default)}, found ${show(a.default)}`);
    if (e.ownedSequence !== a.ownedSequence) {
      out.push(`${at}: owned sequence expected ${show(e.ownedSequence)}, found ${show(a.ownedSequence)}`);
    }
    if (e.identity !== a.identity) out.push(`${at}: identity expected ${show(e.identity)}, found ${show(a.identity)}`);
    if (e.generated !== a.generated) out.push(`${at}: generated expected ${show(e.generated)}, found ${show(a.generated)}`);
  }
  for (const [name, a] of actual.columns) {
    if (!expected.columns.has(name)) {
      out.push(`column ${q(table)}.${q(name)}: in the database (${a.type}) but not in schema.prisma`);
    }
  }
}

function diffIndexes(table: string, expected: TableShape, actual: TableShape, out: string[]): void {
  for (const [name, e] of expected.indexes) {
    const at = `${e.kind === "primary key" ? "primary key" : "index"} ${q(name)} on table ${q(table)}`;
    const a = actual.indexes.get(name);
    if (a === undefined) out.push(`${at}: missing from the database (expected ${describeIndex(e)})`);
    else if (!indexesMatch(e, a)) out.push(`${at}: expected ${describeIndex(e)}, found ${describeIndex(a)}`);
  }
  for (const [name, a] of actual.indexes) {
    if (!expected.indexes.has(name)) {
      out.push(`index ${q(name)} on table ${q(table)}: in the database (${describeIndex(a)}) but not in schema.prisma`);
    }
  }
}

function diffForeignKeys(table: string, expected: TableShape, actual: TableShape, out: string[]): void {
  for (const [name, e] of expected.foreignKeys) {
    const at = `foreign key ${q(name)} on table ${q(table)}`;
    const a = actual.foreignKeys.get(name);
    if (a === undefined) out.push(`${at}: missing from the database (expected ${describeForeignKey(e)})`);
    else if (describeForeignKey(e) !== describeForeignKey(a)) {
      out.push(`${at}: expected ${describeForeignKey(e)}, found ${describeForeignKey(a)}`);
    }
  }
  for (const [name, a] of actual.foreignKeys) {
    if (!expected.foreignKeys.has(name)) {
      out.push(`foreign key ${q(name)} on table ${q(table)}: in the database (${describeForeignKey(a)}) but not in schema.prisma`);
    }
  }
}

/** Every difference between two shapes, one human-readable line each, sorted. */
export function diffSchemas(expected: SchemaShape, actual: SchemaShape): string[] {
  const out: string[] = [];
  for (const [name, e] of expected) {
    const a = actual.get(name);
    if (a === undefined) {
      out.push(`table ${q(name)}: missing from the database`);
      continue;
    }
    diffColumns(name, e, a, out);
    diffIndexes(name, e, a, out);
    diffForeignKeys(name, e, a, out);
  }
  for (const name of actual.keys()) {
    if (!expected.has(name)) out.push(`table ${q(name)}: in the database but not in schema.prisma`);
  }
  return out.sort();
}

/**
 * Compares the database behind `client` with schema.prisma. Runs only
 * catalog reads and temporary tables, so it may run inside a transaction.
 */
export async function compareDatabaseWithPrismaSchema(
  client: ClientBase,
  options: { schemaPath?: string; schema?: string } = {},
): Promise<SchemaComparison> {
  const expectedSql = await expectedSchemaFromPrisma(options.schemaPath);
  const expected = await canonicalize(client, expectedSql);
  const actual = await introspectDatabase(client, options.schema);
  const tables = [...expected.values()];
  const indexes = tables.flatMap((t) => [...t.indexes.values()]);
  return {
    differences: diffSchemas(expected, actual),
    compared: {
      tables: tables.length,
      columns: tables.reduce((n, t) => n + t.columns.size, 0),
      primaryKeys: indexes.filter((x) => x.kind === "primary key").length,
      uniqueIndexes: indexes.filter((x) => x.kind === "unique index").length,
      indexes: indexes.filter((x) => x.kind === "index").length,
      foreignKeys: tables.reduce((n, t) => n + t.foreignKeys.size, 0),
    },
  };
}
