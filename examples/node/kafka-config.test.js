'use strict';
// Self-check of kafka-config.js: `node --test kafka-config.test.js` (no npm install needed).
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test } = require('node:test');
const { KafkaConfigError, kafkaConfig, kafkajsOptions, parseProperties } = require('./kafka-config');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafka-config-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

function file(name, text) {
  const where = path.join(dir, name);
  fs.writeFileSync(where, text);
  return where;
}

const CA = file('ca.pem', '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
const SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required'
  + ' username="worker" password="s3cret;x";';

function refused(properties, pattern) {
  assert.throws(() => kafkajsOptions(properties, 'test.properties'), (err) => {
    assert.ok(err instanceof KafkaConfigError, err);
    assert.match(err.message, pattern);
    assert.doesNotMatch(err.message, /s3cret/, 'no secret in a message');
    return true;
  });
}

test('the Java properties format', () => {
  const text = [
    '# a comment', '! another', '', 'a=1', 'b : 2', 'c   3 4', '  d=x\\', '    y\\',
    '  z', 'e=ends in a backslash\\\\', 'f=\\u0041\\t\\=', 'g\\=h=i', 'a=later wins', 'j',
  ].join('\r\n');
  assert.deepEqual(parseProperties(text, 't'), {
    a: 'later wins', b: '2', c: '3 4', d: 'xyz', e: 'ends in a backslash\\', f: 'A\t=', 'g=h': 'i', j: '',
  });
  assert.throws(() => parseProperties('k=\\u12x4', 't'), /t, line 1: malformed \\u escape/);
});

test('no file: no options, the cluster stays the caller\'s', () => {
  assert.deepEqual(kafkaConfig({}, 'CLIENT'), { properties: {}, sources: [] });
});

test('SASL_SSL with SCRAM and a PEM truststore', () => {
  const where = file('client.properties', [
    'bootstrap.servers=broker:9094', 'security.protocol=SASL_SSL', 'sasl.mechanism=SCRAM-SHA-512',
    `sasl.jaas.config=${SCRAM}`, 'ssl.truststore.type=PEM', `ssl.truststore.location=${CA}`,
    'acks=all', 'session.timeout.ms=45000',
  ].join('\n'));
  const kafka = kafkaConfig({ PARTITA_KAFKA_CONFIG: where }, 'CLIENT');
  assert.equal(kafka.bootstrap, 'broker:9094');
  assert.deepEqual(kafka.sasl, { mechanism: 'scram-sha-512', username: 'worker', password: 's3cret;x' });
  assert.deepEqual(kafka.ssl, { rejectUnauthorized: true, ca: [fs.readFileSync(CA)] });
  assert.deepEqual(kafka.sources, [`PARTITA_KAFKA_CONFIG=${where}`]);
});

test('the role\'s file goes over the common one; --kafka-config replaces the common one', () => {
  const common = file('common.properties', `security.protocol=SSL\nssl.truststore.location=${CA}\n`);
  const role = file('role.properties', `security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=`
    + 'org.apache.kafka.common.security.plain.PlainLoginModule required username=client password=pw;\n');
  const env = { PARTITA_KAFKA_CONFIG: '/no/such/file', PARTITA_KAFKA_CONFIG_CLIENT: role };
  const kafka = kafkaConfig(env, 'CLIENT', common);
  assert.deepEqual(kafka.sasl, { mechanism: 'plain', username: 'client', password: 'pw' });
  assert.deepEqual(kafka.ssl.ca, [fs.readFileSync(CA)]);
  assert.deepEqual(kafka.sources, [`--kafka-config=${common}`, `PARTITA_KAFKA_CONFIG_CLIENT=${role}`]);
  assert.deepEqual(kafkaConfig(env, 'JOB_WORKER', common).ssl.ca, [fs.readFileSync(CA)]);
});

test('an empty endpoint identification algorithm skips the host name, not the chain', () => {
  const { ssl } = kafkajsOptions({ 'security.protocol': 'ssl', 'ssl.endpoint.identification.algorithm': '' }, 't');
  assert.equal(ssl.rejectUnauthorized, true);
  assert.equal(ssl.checkServerIdentity('other-host', {}), undefined);
  const https = kafkajsOptions({ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': 'HTTPS' }, 't');
  assert.equal(https.ssl.checkServerIdentity, undefined);
});

test('client certificates: a PKCS12 keystore, a PEM keystore, PEM texts', () => {
  const p12 = file('client.p12', Buffer.from([0x30, 0x82, 0x01]));
  const pkcs12 = kafkajsOptions({
    'security.protocol': 'SSL', 'ssl.keystore.type': 'PKCS12', 'ssl.keystore.location': p12,
    'ssl.keystore.password': 'changeit',
  }, 't');
  assert.deepEqual(pkcs12.ssl, { rejectUnauthorized: true, pfx: fs.readFileSync(p12), passphrase: 'changeit' });
  const pem = file('client.pem', '-----BEGIN PRIVATE KEY-----\n...\n');
  const both = kafkajsOptions({ 'security.protocol': 'SSL', 'ssl.keystore.location': pem }, 't');
  assert.deepEqual(both.ssl, { rejectUnauthorized: true, cert: fs.readFileSync(pem), key: fs.readFileSync(pem) });
  const inline = kafkajsOptions({
    'security.protocol': 'SSL', 'ssl.keystore.certificate.chain': 'CHAIN', 'ssl.keystore.key': 'KEY',
    'ssl.key.password': 'pw', 'ssl.truststore.certificates': 'CA',
  }, 't');
  assert.deepEqual(inline.ssl, { rejectUnauthorized: true, ca: ['CA'], cert: 'CHAIN', key: 'KEY', passphrase: 'pw' });
});

test('a plaintext cluster: no ssl, no sasl, certificate files not read', () => {
  assert.deepEqual(kafkajsOptions({ 'bootstrap.servers': 'h:1', 'ssl.truststore.location': '/nope.pem' }, 't'), {});
  const { sasl, ssl } = kafkajsOptions({
    'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanism': 'SCRAM-SHA-256', 'sasl.jaas.config': SCRAM,
  }, 't');
  assert.equal(sasl.mechanism, 'scram-sha-256');
  assert.equal(ssl, undefined);
});

test('what kafkajs cannot honour is refused, naming the key', () => {
  refused({ 'security.protocol': 'SASL_TLS' }, /test.properties: security.protocol="SASL_TLS": use one of/);
  refused({ 'security.protocol': 'SASL_SSL', 'sasl.jaas.config': SCRAM }, /sasl.mechanism="": kafkajs .* speaks PLAIN/);
  refused({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'OAUTHBEARER', 'sasl.jaas.config': SCRAM }, /sasl.mechanism="OAUTHBEARER"/);
  refused({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN' }, /sasl.jaas.config: .* needs sasl.jaas.config=/);
  refused({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.jaas.config': SCRAM },
    /sasl.jaas.config: sasl.mechanism=PLAIN logs in with PlainLoginModule, not org.apache.kafka/);
  refused({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-256', 'sasl.jaas.config': 'username="x" password="s3cret"' },
    /sasl.jaas.config: not of the form/);
  refused({ 'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-256',
    'sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required password="s3cret";' },
  /sasl.jaas.config: it has no username/);
  refused({ 'security.protocol': 'SSL', 'sasl.mechanism': 'PLAIN' }, /sasl.mechanism="PLAIN": security.protocol=SSL does not use SASL/);
  refused({ 'security.protocol': 'SSL', 'ssl.truststore.location': 'truststore.jks' }, /ssl.truststore.location="truststore.jks": a JKS truststore/);
  refused({ 'security.protocol': 'SSL', 'ssl.keystore.location': 'ks', 'ssl.keystore.type': 'JKS' }, /ssl.keystore.location="ks": a JKS keystore/);
  refused({ 'security.protocol': 'SSL', 'ssl.truststore.location': path.join(dir, 'missing.pem') }, /missing.pem: cannot read it \(ENOENT\)/);
  refused({ 'security.protocol': 'SSL', 'ssl.endpoint.identification.algorithm': 'ldaps' }, /ssl.endpoint.identification.algorithm="ldaps"/);
  refused({ 'security.protocol': 'SSL', 'ssl.cipher.suites': 'X', 'ssl.key.pem': 's3cret' }, /ssl.cipher.suites: the Node example .* cannot honour/);
  assert.throws(() => kafkaConfig({ PARTITA_KAFKA_CONFIG: path.join(dir, 'none.properties') }, 'CLIENT'),
    /^KafkaConfigError: PARTITA_KAFKA_CONFIG=.*none.properties: cannot read the Kafka client properties file \(no such file\)$/);
});
