'use strict';
// Partita's wire format (docs/producing.md) for Node.js, shared by producer.js and worker.js:
// avsc for Avro, kafkajs for Kafka; the single-object header, the routing of keyed commands
// and the reply headers are written by hand from the docs. No Partita code is involved.
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { parseArgs } = require('util');
const avro = require('avsc');
const { Kafka, Partitioners, logLevel } = require('kafkajs');
const kafkaConfig = require('./kafka-config');

const PROTOCOL = 'io.partita.protocol.';
const ENGINE_VERSION = 'node-example/1.0';
const DEFAULT_SCHEMA = path.join(__dirname, '..', '..', 'avro', 'record.avsc');

// -- settings: flags, else the environment variables of the `partita` CLI, else laptop defaults --

const CLUSTER_OPTIONS = {
  'bootstrap-servers': { type: 'string' },
  'kafka-config': { type: 'string' },
  namespace: { type: 'string' },
  schema: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
};

const CLUSTER_USAGE = `  --bootstrap-servers HOST:PORT  Kafka (KAFKA_BOOTSTRAP_SERVERS, else the file's bootstrap.servers,
                                 default 127.0.0.1:9092)
  --kafka-config FILE            Kafka client properties (security.protocol, sasl.*, ssl.*; see
                                 kafka-config.js): PARTITA_KAFKA_CONFIG, PARTITA_KAFKA_CONFIG_<ROLE> over it
  --namespace NS                 topic prefix (PARTITA_NAMESPACE, default partita)
  --schema FILE                  the engine's Avro schema (PARTITA_SCHEMA, default ../../avro/record.avsc)`;

/**
 * Parses argv with the cluster flags plus `options`; prints `usage` and exits on --help or a bad
 * flag. `role` (CLIENT, JOB_WORKER) picks the properties file PARTITA_KAFKA_CONFIG_<ROLE>. Throws
 * a KafkaConfigError naming the file and key when the Kafka properties cannot be used.
 */
function settings(argv, options, usage, role) {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: { ...CLUSTER_OPTIONS, ...options } }));
  } catch (err) {
    console.error(`${err.message}\n${usage}\n${CLUSTER_USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(`${usage}\n${CLUSTER_USAGE}`);
    process.exit(0);
  }
  const namespace = values.namespace ?? process.env.PARTITA_NAMESPACE ?? 'partita';
  const kafka = kafkaConfig.kafkaConfig(process.env, role, values['kafka-config']);
  return {
    bootstrap: values['bootstrap-servers'] || process.env.KAFKA_BOOTSTRAP_SERVERS || kafka.bootstrap
      || '127.0.0.1:9092',
    kafka,
    namespace,
    schema: values.schema ?? process.env.PARTITA_SCHEMA ?? DEFAULT_SCHEMA,
    // Clients write commands to the ingress topic, never to the log (docs/producing.md).
    commandsTopic: `${namespace}.commands`,
    repliesTopic: `${namespace}.replies`,
    values,
  };
}

function kafka(config, clientId) {
  const brokers = config.bootstrap.split(',').map((broker) => broker.trim()).filter(Boolean);
  const { ssl, sasl } = config.kafka;
  return new Kafka({ clientId, brokers, ssl, sasl, logLevel: logLevel.ERROR, logCreator });
}

/** The start line's cluster, e.g. `127.0.0.1:9094 over SASL_SSL (scram-sha-512 as 'x'), settings from ...`. */
function cluster(config) {
  return `${config.bootstrap}${kafkaConfig.describe(config.kafka)}`;
}

/**
 * One line for a failure, with what to check when the cluster refused a login, certificate or
 * ACL; `config` (from settings(), undefined if it failed) names the properties files.
 */
function explain(err, config) {
  return `${err.message}${kafkaConfig.hint(err, config?.kafka)}`;
}

// kafkajs's errors as one line each on stderr; it retries most of them by itself, so a line
// printed in the last 30 s is not printed again (a refused certificate is retried for seconds).
function logCreator() {
  const printed = new Map();
  return ({ log }) => {
    const line = `kafkajs: ${log.message}${log.error ? `: ${log.error}` : ''}`;
    const now = Date.now();
    if (now - (printed.get(line) ?? -Infinity) < 30000) return;
    printed.set(line, now);
    console.error(line);
  };
}

function producer(client) {
  // Every send names its partition, so the partitioner never decides; naming one keeps kafkajs quiet.
  return client.producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true });
}

/** Throws, saying what to run, unless every topic exists (kafkajs would retry for a while first). */
async function requireTopics(client, topics) {
  const admin = client.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = topics.filter((topic) => !existing.has(topic));
    if (missing.length) {
      const err = new Error(`there is no topic ${missing.join(', ')}: run \`partita topics apply\``
        + ' (with --job-type TYPE for a job topic)');
      err.code = 'MISSING_TOPICS'; // or, with ACLs, topics the principal may not describe
      throw err;
    }
  } finally {
    await admin.disconnect();
  }
}

// -- the codec ---------------------------------------------------------------------------------

// Avro longs as BigInt: keys use all 64 bits (the partition id is in the top 13), beyond 2^53.
const LongType = avro.types.LongType.__with({
  fromBuffer: (buf) => buf.readBigInt64LE(),
  toBuffer: (n) => {
    const buf = Buffer.alloc(8);
    buf.writeBigInt64LE(BigInt(n));
    return buf;
  },
  fromJSON: BigInt,
  toJSON: Number,
  isValid: (n) => typeof n === 'bigint' || Number.isSafeInteger(n),
  compare: (a, b) => (a === b ? 0 : a < b ? -1 : 1),
});

// CRC-64-AVRO (Rabin) of the schema's Parsing Canonical Form, as the Avro specification defines it.
const EMPTY = 0xc15d213aa4d7a795n;
const TABLE = Array.from({ length: 256 }, (_, i) => {
  let fp = BigInt(i);
  for (let j = 0; j < 8; j++) fp = (fp >> 1n) ^ (EMPTY & -(fp & 1n));
  return fp;
});

function fingerprint(type) {
  let fp = EMPTY;
  for (const byte of Buffer.from(JSON.stringify(type.schema()), 'utf8')) {
    fp = (fp >> 8n) ^ TABLE[Number((fp ^ BigInt(byte)) & 0xffn)];
  }
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE(BigInt.asUintN(64, fp));
  return out;
}

/** Records in single-object encoding: C3 01, the schema's fingerprint (little-endian), the body. */
class Codec {
  constructor(schemaPath) {
    const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
    this.type = avro.Type.forSchema(schema, { registry: { long: LongType }, wrapUnions: true });
    this.header = Buffer.concat([Buffer.from([0xc3, 0x01]), fingerprint(this.type)]);
  }

  encode(record) {
    return Buffer.concat([this.header, this.type.toBuffer(record)]);
  }

  /** Throws when the record was written with another schema (a newer engine: fetch its record.avsc). */
  decode(buf) {
    if (!buf.subarray(0, 10).equals(this.header)) {
      throw new Error(`not a record of this schema: header ${buf.subarray(0, 10).toString('hex')}`);
    }
    return this.type.fromBuffer(buf.subarray(10));
  }

  /** A command; fields of `value` left out take the schema's defaults. `key` -1: a new entity. */
  command(valueType, intent, branch, value, key = -1n) {
    return {
      partitionId: key >= 0n ? partitionOfKey(key) + 1 : -1,
      key: BigInt(key),
      recordType: 'COMMAND',
      valueType,
      intent,
      timestamp: BigInt(Date.now()),
      engineVersion: ENGINE_VERSION,
      value: { [PROTOCOL + branch]: value },
    };
  }
}

/** The partition of an entity (of the log, and so of the ingress topic): its partition id is in
 * the key's top 13 bits. */
function partitionOfKey(key) {
  return Number(BigInt(key) >> 51n) - 1;
}

/** The one value of an Avro union as avsc decodes it ({"io.partita.protocol.X": value}), or null. */
function unwrap(union) {
  return union === null ? null : Object.values(union)[0];
}

/** The three filter headers every Partita record carries. */
function recordHeaders(record) {
  return { recordType: record.recordType, valueType: record.valueType, intent: record.intent };
}

/** "NOT_FOUND process 'x' is not deployed" for a rejection, null for an event. */
function rejection(record) {
  if (record.recordType !== 'COMMAND_REJECTION') return null;
  return `${unwrap(record.rejectionType)} ${record.rejectionReason}`;
}

// -- replies -------------------------------------------------------------------------------------

/**
 * Answers to our commands (docs/producing.md, "Replies"). Every command names one partition of
 * `<ns>.replies` and a correlation id; this reads that partition from its end as it was before
 * the first command (kafkajs has no manual assignment, so a throwaway consumer group seeks there).
 * The group id is `<ns>.client.replies-<uuid>`: with ACLs, a client may join groups under
 * `<ns>.client` (docs/security.md).
 */
class Replies {
  constructor(client, codec, config) {
    this.client = client;
    this.codec = codec;
    this.topic = config.repliesTopic;
    this.group = `${config.namespace}.client.replies-${crypto.randomUUID()}`;
    this.waiting = new Map();
  }

  async start() {
    await requireTopics(this.client, [this.topic]);
    const admin = this.client.admin();
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(this.topic);
    await admin.disconnect();
    const end = ends[crypto.randomInt(ends.length)];
    this.partition = end.partition;
    this.consumer = this.client.consumer({ groupId: this.group });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topic });
    const joined = new Promise((resolve) => {
      // On every join, also when kafkajs restarts the consumer after an error (e.g. "the
      // coordinator is loading" on a fresh broker): seeking again only re-reads ignored replies.
      this.consumer.on(this.consumer.events.GROUP_JOIN, () => {
        this.consumer.seek({ topic: this.topic, partition: this.partition, offset: end.offset });
        resolve();
      });
    });
    await this.consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const id = message.headers.kafka_correlationId?.toString();
        const waiter = partition === this.partition && this.waiting.get(id);
        if (waiter) {
          this.waiting.delete(id);
          clearTimeout(waiter.timer);
          waiter.resolve(this.codec.decode(message.value));
        }
      },
    });
    await joined;
    return this;
  }

  /** The reply headers of a new command and the promise of its answer (null after `timeoutMs`). */
  expect(timeoutMs) {
    const id = crypto.randomUUID();
    const answer = new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(null);
      }, timeoutMs);
      this.waiting.set(id, { resolve, timer });
    });
    const partition = Buffer.alloc(4);
    partition.writeInt32BE(this.partition);
    const headers = {
      kafka_replyTopic: this.topic,
      kafka_replyPartition: partition,
      kafka_correlationId: id,
    };
    return { headers, answer };
  }

  async stop() {
    await this.consumer?.disconnect();
  }
}

/**
 * Sends `record` to `partition` of the ingress topic `topic` (`<ns>.commands`) with reply
 * headers; resolves to the engine's answer (an event or a COMMAND_REJECTION), or null when none
 * came within `timeoutMs`. The owner of log partition p reads ingress partition p.
 */
async function request(sender, replies, topic, partition, record, timeoutMs) {
  const { headers, answer } = replies.expect(timeoutMs);
  await sender.send({
    topic,
    messages: [{
      partition,
      value: replies.codec.encode(record),
      headers: { ...recordHeaders(record), ...headers },
    }],
  });
  return answer;
}

module.exports = {
  Codec,
  Replies,
  cluster,
  explain,
  kafka,
  partitionOfKey,
  producer,
  rejection,
  request,
  requireTopics,
  settings,
  unwrap,
};
