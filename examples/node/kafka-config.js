'use strict';
// Kafka client properties files in Kafka's own (Java) format, the file the `partita` CLI, the
// Java worker and Kafka's tools read (PARTITA_KAFKA_CONFIG), translated to kafkajs's `ssl` and
// `sasl` options. Needs nothing but Node itself, so `node --test kafka-config.test.js` runs
// without `npm install`.
//
// What is translated (anything else that would change how the client connects is refused,
// naming the key; tuning keys such as acks or session.timeout.ms are Java's and left out):
//   security.protocol            PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
//   sasl.mechanism               PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, with sasl.jaas.config
//                                `...PlainLoginModule|ScramLoginModule required username=".." password="..";`
//   ssl.truststore.location      a PEM file of CA certificates (ssl.truststore.type=PEM); or
//   ssl.truststore.certificates  the PEM text itself. Without either, Node's own CA list.
//   ssl.keystore.location        client certificate (mTLS): PKCS12 with ssl.keystore.password,
//                                or PEM (key and chain in one file) with ssl.key.password;
//   ssl.keystore.certificate.chain, ssl.keystore.key   the PEM texts themselves
//   ssl.endpoint.identification.algorithm   https (the default): the broker's certificate must
//                                name its host; empty: the chain is still verified, the name not
const fs = require('fs');
const path = require('path');

const PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'];
const MECHANISMS = {
  PLAIN: { kafkajs: 'plain', loginModule: 'PlainLoginModule' },
  'SCRAM-SHA-256': { kafkajs: 'scram-sha-256', loginModule: 'ScramLoginModule' },
  'SCRAM-SHA-512': { kafkajs: 'scram-sha-512', loginModule: 'ScramLoginModule' },
};
// Security keys that need no translation: the store types are read where the store is, and
// Node negotiates the TLS version and picks its key and trust managers itself.
const NOT_NEEDED = new Set([
  'ssl.truststore.type', 'ssl.keystore.type', 'ssl.truststore.password', 'ssl.protocol',
  'ssl.keymanager.algorithm', 'ssl.trustmanager.algorithm', 'ssl.secure.random.implementation',
]);

// Keys whose value an error message may show; the others may hold a secret.
const SHOWN = new Set([
  'security.protocol', 'sasl.mechanism', 'ssl.truststore.location', 'ssl.keystore.location',
  'ssl.endpoint.identification.algorithm',
]);

class KafkaConfigError extends Error {
  name = 'KafkaConfigError';
}

// -- the Java properties format ------------------------------------------------------------------

const ESCAPES = { t: '\t', n: '\n', r: '\r', f: '\f' };

/**
 * The properties in `text` (Java's `.properties` format: `key=value`, `key: value` or
 * `key value`; `#` and `!` comment lines; a line ending in an odd number of backslashes goes on
 * on the next; `\t`, `\n`, `\uXXXX` and escaped separators). Later keys win, as in Java.
 * Throws KafkaConfigError naming `where` and the line for a broken line.
 */
function parseProperties(text, where) {
  const out = {};
  for (const [number, line] of logicalLines(text)) {
    const [key, value] = split(line);
    if (!key) throw new KafkaConfigError(`${where}, line ${number}: a value without a key: ${line}`);
    out[unescape(key, where, number)] = unescape(value, where, number);
  }
  return out;
}

function logicalLines(text) {
  const lines = [];
  let pending = null;
  let start = 0;
  text.split(/\r\n|\r|\n/).forEach((raw, i) => {
    const stripped = raw.replace(/^[ \t\f]+/, '');
    if (pending === null) {
      if (!stripped || stripped[0] === '#' || stripped[0] === '!') return;
      [start, pending] = [i + 1, ''];
    }
    pending += stripped;
    const backslashes = pending.length - pending.replace(/\\+$/, '').length;
    if (backslashes % 2 === 1) {
      pending = pending.slice(0, -1);
      return;
    }
    lines.push([start, pending]);
    pending = null;
  });
  if (pending !== null) lines.push([start, pending]);
  return lines;
}

function split(line) {
  let i = 0;
  while (i < line.length && !'=: \t\f'.includes(line[i])) i += line[i] === '\\' ? 2 : 1;
  const key = line.slice(0, i);
  let rest = line.slice(i).replace(/^[ \t\f]+/, '');
  if (rest[0] === '=' || rest[0] === ':') rest = rest.slice(1).replace(/^[ \t\f]+/, '');
  return [key, rest];
}

function unescape(text, where, number) {
  if (!text.includes('\\')) return text;
  let out = '';
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '\\' || i + 1 === text.length) {
      out += text[i];
      continue;
    }
    const code = text[++i];
    if (code === 'u') {
      const digits = text.slice(i + 1, i + 5);
      if (!/^[0-9a-fA-F]{4}$/.test(digits)) {
        throw new KafkaConfigError(`${where}, line ${number}: malformed \\u escape \\u${digits}`);
      }
      out += String.fromCharCode(parseInt(digits, 16));
      i += 4;
    } else {
      out += ESCAPES[code] ?? code;
    }
  }
  return out;
}

// -- translation to kafkajs -------------------------------------------------------------------------

/**
 * kafkajs's `{ ssl, sasl }` for Java client `properties` (either absent for a plaintext
 * cluster), reading the certificate files they name. Throws KafkaConfigError naming `where` and
 * the key for a value kafkajs cannot honour; never drops a security setting silently.
 */
function kafkajsOptions(properties, where) {
  const props = { ...properties };
  delete props['bootstrap.servers'];
  const take = (key) => {
    const value = props[key];
    delete props[key];
    return value;
  };
  const fail = (key, message) => {
    const value = SHOWN.has(key) ? `=${JSON.stringify(properties[key] ?? '')}` : ''; // others may be secret
    throw new KafkaConfigError(`${where}: ${key}${value}: ${message}`);
  };
  const protocol = (take('security.protocol') ?? 'PLAINTEXT').trim().toUpperCase();
  if (!PROTOCOLS.includes(protocol)) fail('security.protocol', `use one of ${PROTOCOLS.join(', ')}`);
  const options = {};
  const mechanism = take('sasl.mechanism');
  const jaas = take('sasl.jaas.config');
  if (protocol.startsWith('SASL_')) {
    options.sasl = saslOptions((mechanism ?? 'GSSAPI').trim().toUpperCase(), jaas, fail); // GSSAPI: Java's default
  } else if (mechanism !== undefined) {
    fail('sasl.mechanism', `security.protocol=${protocol} does not use SASL; set security.protocol=SASL_SSL`);
  }
  const tls = Object.fromEntries(TLS_KEYS.map((key) => [key, take(key)]));
  for (const rest of Object.keys(props)) {
    if ((rest.startsWith('ssl.') || rest.startsWith('sasl.')) && !NOT_NEEDED.has(rest)) {
      fail(rest, 'the Node example (kafkajs) cannot honour this setting; remove it from the file'
        + ' for this client or use a file of its own');
    }
  }
  if (protocol.endsWith('SSL')) options.ssl = sslOptions(tls, properties, where, fail);
  return options;
}

function saslOptions(mechanism, jaas, fail) {
  const known = MECHANISMS[mechanism];
  if (!known) {
    fail('sasl.mechanism', `kafkajs in this example speaks ${Object.keys(MECHANISMS).join(', ')}`);
  }
  if (jaas === undefined) {
    fail('sasl.jaas.config', `sasl.mechanism=${mechanism} needs sasl.jaas.config=`
      + `org.apache.kafka...${known.loginModule} required username="NAME" password="SECRET";`);
  }
  const { module, options } = parseJaas(jaas, () => fail('sasl.jaas.config',
    'not of the form `<LoginModule class> required username="NAME" password="SECRET";`'));
  if (module.split('.').pop() !== known.loginModule) {
    fail('sasl.jaas.config', `sasl.mechanism=${mechanism} logs in with ${known.loginModule}, not ${module}`);
  }
  for (const option of ['username', 'password']) {
    if (options[option] === undefined) fail('sasl.jaas.config', `it has no ${option}`);
  }
  return { mechanism: known.kafkajs, username: options.username, password: options.password };
}

const TLS_KEYS = [
  'ssl.truststore.location', 'ssl.truststore.certificates', 'ssl.keystore.location',
  'ssl.keystore.certificate.chain', 'ssl.keystore.key', 'ssl.keystore.password', 'ssl.key.password',
  'ssl.endpoint.identification.algorithm',
];

/** Node's tls options for the TLS_KEYS in `tls`; the broker's chain is always verified. */
function sslOptions(tls, properties, where, fail) {
  const ssl = { rejectUnauthorized: true };
  const truststore = tls['ssl.truststore.location'];
  if (truststore !== undefined) {
    const kind = storeType(properties, 'ssl.truststore', truststore);
    if (kind !== 'PEM') {
      fail('ssl.truststore.location', `a ${kind} truststore, which Node cannot read; export the CA`
        + ' as PEM (`keytool -exportcert -rfc -alias ca -keystore FILE -file ca.pem`) and set'
        + ' ssl.truststore.type=PEM and ssl.truststore.location=ca.pem');
    }
    ssl.ca = [readStore(truststore, 'ssl.truststore.location', where)];
  }
  if (tls['ssl.truststore.certificates'] !== undefined) {
    ssl.ca = [...(ssl.ca ?? []), tls['ssl.truststore.certificates']];
  }
  const keystore = tls['ssl.keystore.location'];
  if (keystore !== undefined) {
    const kind = storeType(properties, 'ssl.keystore', keystore);
    if (kind !== 'PKCS12' && kind !== 'PEM') {
      fail('ssl.keystore.location', `a ${kind} keystore, which Node cannot read; convert it`
        + ' (`keytool -importkeystore -srckeystore FILE -destkeystore client.p12 -deststoretype PKCS12`)'
        + ' and set ssl.keystore.type=PKCS12');
    }
    const bytes = readStore(keystore, 'ssl.keystore.location', where);
    if (kind === 'PKCS12') {
      ssl.pfx = bytes;
      ssl.passphrase = tls['ssl.keystore.password'];
    } else { // key and certificate chain in one PEM file, as Java's PEM keystore has them
      [ssl.cert, ssl.key, ssl.passphrase] = [bytes, bytes, tls['ssl.key.password']];
    }
  }
  if (tls['ssl.keystore.certificate.chain'] !== undefined) ssl.cert = tls['ssl.keystore.certificate.chain'];
  if (tls['ssl.keystore.key'] !== undefined) {
    [ssl.key, ssl.passphrase] = [tls['ssl.keystore.key'], tls['ssl.key.password']];
  }
  const algorithm = tls['ssl.endpoint.identification.algorithm'];
  if (algorithm !== undefined) {
    const name = algorithm.trim().toLowerCase();
    if (name === '') {
      ssl.checkServerIdentity = () => undefined; // Java's "off": the chain is verified, the name not
    } else if (name !== 'https') {
      fail('ssl.endpoint.identification.algorithm', 'use https (verify the host name) or nothing (do not)');
    }
  }
  if (ssl.passphrase === undefined) delete ssl.passphrase;
  return ssl;
}

/** `<class> <flag> key="value" key=value ...;` as { module, options }; calls `bad` if it is not. */
function parseJaas(text, bad) {
  const match = /^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b([\s\S]*?);?\s*$/.exec(text);
  if (!match) return bad();
  const options = {};
  const option = /([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))/gy;
  let rest = match[3];
  for (;;) {
    rest = rest.replace(/^\s+/, '');
    if (!rest) break;
    option.lastIndex = 0;
    const found = option.exec(rest);
    if (!found) return bad();
    const [whole, key, quoted, bare] = found;
    options[key] = quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : bare;
    rest = rest.slice(whole.length);
  }
  return { module: match[1], options };
}

/** The declared store type, else a guess from the file name (Java's default is JKS). */
function storeType(properties, prefix, location) {
  const declared = properties[`${prefix}.type`];
  if (declared) return declared.trim().toUpperCase();
  const suffix = path.extname(location).toLowerCase();
  return { '.pem': 'PEM', '.crt': 'PEM', '.p12': 'PKCS12', '.pfx': 'PKCS12' }[suffix] ?? 'JKS';
}

function readStore(location, key, where) {
  try {
    return fs.readFileSync(location);
  } catch (err) {
    throw new KafkaConfigError(`${where}: ${key}=${location}: cannot read it (${err.code ?? err.message})`);
  }
}

// -- where the files come from ------------------------------------------------------------------

/**
 * The Kafka settings of a program: `file` (its --kafka-config flag), else PARTITA_KAFKA_CONFIG,
 * then PARTITA_KAFKA_CONFIG_<ROLE> over it (role e.g. CLIENT, JOB_WORKER), as the `partita` CLI
 * reads them. Returns { properties, sources, bootstrap (the files' bootstrap.servers or
 * undefined), ssl, sasl }; with no file, just { properties: {}, sources: [] }.
 */
function kafkaConfig(env, role, file) {
  const files = [
    file !== undefined ? ['--kafka-config', file] : ['PARTITA_KAFKA_CONFIG', env.PARTITA_KAFKA_CONFIG],
    [`PARTITA_KAFKA_CONFIG_${role}`, env[`PARTITA_KAFKA_CONFIG_${role}`]],
  ].filter(([, where]) => where);
  const properties = {};
  for (const [what, where] of files) {
    let text;
    try {
      text = fs.readFileSync(where, 'utf8');
    } catch (err) {
      throw new KafkaConfigError(`${what}=${where}: cannot read the Kafka client properties file`
        + ` (${err.code === 'ENOENT' ? 'no such file' : err.code ?? err.message})`);
    }
    Object.assign(properties, parseProperties(text, `${what}=${where}`));
  }
  const sources = files.map(([what, where]) => `${what}=${where}`);
  if (!sources.length) return { properties, sources };
  return {
    properties,
    sources,
    bootstrap: properties['bootstrap.servers'],
    ...kafkajsOptions(properties, sources.join(' + ')),
  };
}

/** E.g. ` over SASL_SSL (scram-sha-512 as 'worker'), settings from PARTITA_KAFKA_CONFIG=...`. */
function describe(kafka) {
  if (!kafka.sources.length) return '';
  const protocol = (kafka.properties['security.protocol'] ?? 'PLAINTEXT').toUpperCase();
  const login = kafka.sasl ? ` (${kafka.sasl.mechanism} as '${kafka.sasl.username}')` : '';
  return ` over ${protocol}${login}, settings from ${kafka.sources.join(' + ')}`;
}

/** What to check after kafkajs failed with `err` (with `kafka` as kafkaConfig() made it), or ''. */
function hint(err, kafka) {
  const text = `${err.name} ${err.type ?? ''} ${err.message} ${err.code ?? ''} ${err.cause?.code ?? ''}`;
  const file = kafka?.sources.length ? kafka.sources.join(' + ') : 'no Kafka properties file is set (PARTITA_KAFKA_CONFIG)';
  if (/SASLAuthentication|SASL_AUTHENTICATION_FAILED/.test(text)) {
    return ` (check sasl.mechanism and the user and password in sasl.jaas.config; see ${file})`;
  }
  if (/AUTHORIZATION_FAILED|not authorized/i.test(text)) {
    return ' (the principal lacks an ACL: see `partita acls --role ...`)';
  }
  if (err.code === 'MISSING_TOPICS' && kafka?.sources.length) {
    return ', or the principal lacks the ACL to describe it (see `partita acls --role ...`)';
  }
  if (/CERT|certificate|SSL|TLS/.test(text)) {
    return ` (is the broker's CA in ssl.truststore.location, does its certificate name the host? see ${file})`;
  }
  return '';
}

module.exports = { KafkaConfigError, describe, hint, kafkaConfig, kafkajsOptions, parseJaas, parseProperties };
