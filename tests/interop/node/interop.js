'use strict';
// Produces and reads Partita records with nothing but avro/record.avsc and the docs:
// avsc for Avro, kafkajs for Kafka, and the single-object header written by hand.
//
//   node interop.js fingerprint SCHEMA                 little-endian CRC-64-AVRO, hex
//   node interop.js partition N KEY...                 Kafka's default partition of each key
//   node interop.js produce BOOTSTRAP NS SCHEMA         three commands to the ingress topic
//                                                      <NS>.commands; prints partition/offset
//   node interop.js consume BOOTSTRAP TOPIC SCHEMA N    prints each record as JSON
//
// Clients write commands to `<ns>.commands`, never to `<ns>.log`: only the engine writes the
// log (docs/producing.md).
const fs = require('fs');
const avro = require('avsc');
const { Kafka, Partitioners, logLevel } = require('kafkajs');

// Avro longs as BigInt: keys use all 64 bits (partition id in the top 13), beyond 2^53.
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

function loadType(path) {
  const schema = JSON.parse(fs.readFileSync(path, 'utf8'));
  return avro.Type.forSchema(schema, { registry: { long: LongType }, wrapUnions: true });
}

// CRC-64-AVRO (Rabin) over the schema's Parsing Canonical Form, as the Avro spec defines it.
const EMPTY = 0xc15d213aa4d7a795n;
const TABLE = Array.from({ length: 256 }, (_, i) => {
  let fp = BigInt(i);
  for (let j = 0; j < 8; j++) fp = (fp >> 1n) ^ (EMPTY & -(fp & 1n));
  return fp;
});
function fingerprint(type) {
  const canonical = Buffer.from(JSON.stringify(type.schema()), 'utf8');
  let fp = EMPTY;
  for (const byte of canonical) fp = (fp >> 8n) ^ TABLE[Number((fp ^ BigInt(byte)) & 0xffn)];
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE(BigInt.asUintN(64, fp));
  return out;
}

function encode(type, record) {
  return Buffer.concat([Buffer.from([0xc3, 0x01]), fingerprint(type), type.toBuffer(record)]);
}

function decode(type, buf) {
  if (buf[0] !== 0xc3 || buf[1] !== 0x01) throw new Error('not single-object encoded');
  if (!buf.subarray(2, 10).equals(fingerprint(type))) {
    throw new Error(`unknown fingerprint ${buf.subarray(2, 10).toString('hex')}`);
  }
  return type.fromBuffer(buf.subarray(10));
}

// Kafka's Java default partitioner, as kafkajs's DefaultPartitioner implements it.
function murmur2(data) {
  const m = 0x5bd1e995;
  let h = (0x9747b28c ^ data.length) | 0;
  const end = data.length - (data.length % 4);
  for (let i = 0; i < end; i += 4) {
    let k = data.readInt32LE(i);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  switch (data.length % 4) {
    case 3: h ^= data[end + 2] << 16; // falls through
    case 2: h ^= data[end + 1] << 8; // falls through
    case 1: h ^= data[end]; h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h;
}

function envelope(valueType, intent, key, partitionId, branch, value) {
  return {
    partitionId,
    key: BigInt(key),
    sourceRecordPosition: -1n,
    recordType: 'COMMAND',
    valueType,
    intent,
    recordVersion: 1,
    timestamp: 1764000000000n,
    rejectionType: null,
    rejectionReason: '',
    engineVersion: 'node-interop',
    value: { [`io.partita.protocol.${branch}`]: value },
  };
}

function withDefaults(type, branch, fields) {
  const schema = type.getField('value').type.types.find((t) => t.name === `io.partita.protocol.${branch}`);
  const out = {};
  for (const field of schema.fields) {
    if (field.name in fields) out[field.name] = fields[field.name];
    else out[field.name] = field.type.fromJSON ? field.type.fromJSON(field.defaultValue()) : field.defaultValue();
  }
  return out;
}

function headers(valueType, intent) {
  return { recordType: 'COMMAND', valueType, intent };
}

const json = (obj) => JSON.stringify(obj, (_, v) => (typeof v === 'bigint' ? v.toString() : Buffer.isBuffer(v) ? v.toString('hex') : v));

async function produce(bootstrap, namespace, type) {
  const topic = `${namespace}.commands`;
  const kafka = new Kafka({ clientId: 'node-interop', brokers: [bootstrap], logLevel: logLevel.ERROR });
  const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner, idempotent: true });
  await producer.connect();
  const jobKey = 2251799813685249n + 42n;
  const sends = [
    { valueType: 'MESSAGE', intent: 'PUBLISH', key: 'order-0815', value: encode(type, envelope('MESSAGE', 'PUBLISH', -1, -1, 'MessageValue',
      withDefaults(type, 'MessageValue', { name: 'payment-received', correlationKey: 'order-0815', timeToLive: 0n, variables: '{"amount": 12}', messageId: 'n-1' }))) },
    { valueType: 'PROCESS_INSTANCE_CREATION', intent: 'CREATE', partition: 0, value: encode(type, envelope('PROCESS_INSTANCE_CREATION', 'CREATE', -1, -1, 'ProcessInstanceCreationValue',
      withDefaults(type, 'ProcessInstanceCreationValue', { bpmnProcessId: 'order-process', variables: '{"orderId": 815}', fetchVariables: ['total'] }))) },
    { valueType: 'JOB', intent: 'COMPLETE', partition: Number(jobKey >> 51n) - 1, value: encode(type, envelope('JOB', 'COMPLETE', jobKey, 1, 'JobValue',
      withDefaults(type, 'JobValue', { variables: '{"paid": true}', customHeaders: { source: 'node' } }))) },
  ];
  for (const s of sends) {
    const message = { value: s.value, headers: headers(s.valueType, s.intent) };
    if (s.key !== undefined) message.key = s.key;
    if (s.partition !== undefined) message.partition = s.partition;
    const [meta] = await producer.send({ topic, messages: [message] });
    console.log(json({ partition: meta.partition, offset: Number(meta.baseOffset) }));
  }
  await producer.disconnect();
}

async function consume(bootstrap, topic, type, count) {
  const kafka = new Kafka({ clientId: 'node-interop', brokers: [bootstrap], logLevel: logLevel.ERROR });
  const consumer = kafka.consumer({ groupId: `node-interop-${process.pid}-${Date.now()}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${seen} of ${count} records`)), 30000);
    consumer.run({
      eachMessage: async ({ message }) => {
        const record = decode(type, message.value);
        console.log(json({ offset: Number(message.offset), headerIntent: message.headers.intent.toString(), record }));
        seen += 1;
        if (seen >= count) { clearTimeout(timer); resolve(); }
      },
    }).catch(reject);
  });
  await consumer.disconnect();
}

async function main(argv) {
  const [mode, ...args] = argv;
  if (mode === 'fingerprint') {
    console.log(fingerprint(loadType(args[0])).toString('hex'));
  } else if (mode === 'partition') {
    const n = Number(args[0]);
    for (const key of args.slice(1)) console.log((murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff) % n);
  } else if (mode === 'produce') {
    await produce(args[0], args[1], loadType(args[2]));
  } else if (mode === 'consume') {
    await consume(args[0], args[1], loadType(args[2]), Number(args[3]));
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
}

main(process.argv.slice(2)).then(() => process.exit(0)).catch((err) => { console.error(err); process.exit(1); });
