'use strict';
// Deploys BPMN files (DEPLOYMENT CREATE) and starts process instances that await their result
// (PROCESS_INSTANCE_CREATION CREATE_WITH_AWAITING_RESULT); prints each instance's variables when
// it completes, or the engine's rejection. Exits 1 unless every request succeeded.
const fs = require('fs');
const path = require('path');
const partita = require('./partita');

const USAGE = `usage: node producer.js [--deploy FILE]... [--process ID] [--count N] [--variables JSON] [--timeout S]
  --deploy FILE      deploy this BPMN file first (repeatable)
  --process ID       id of the BPMN process to start (default order-pricing)
  --count N          instances to create (default 5; 0 only deploys)
  --variables JSON   variables of every instance, over {"orderId": i, "amount": 25 * i} (i = 1..N)
  --timeout S        seconds to wait for each answer (default 60)`;

async function deploy(client, file, timeoutMs) {
  const value = { resources: [{ resourceName: path.basename(file), resource: fs.readFileSync(file) }] };
  const record = client.codec.command('DEPLOYMENT', 'CREATE', 'DeploymentValue', value);
  const answer = await partita.request(
    client.sender, client.replies, client.config.commandsTopic, 0, record, timeoutMs);
  if (answer === null) {
    console.log(`deploy ${file}: no answer within ${timeoutMs / 1000} s`
      + ' (is a `partita worker` running?)');
    return false;
  }
  if (partita.rejection(answer)) {
    console.log(`deploy ${file}: rejected ${partita.rejection(answer)}`);
    return false;
  }
  for (const process of partita.unwrap(answer.value).processesMetadata) {
    const what = process.isDuplicate ? 'unchanged, still' : 'now';
    console.log(`deployed ${process.resourceName}: process ${process.bpmnProcessId} ${what} version`
      + ` ${process.version} (key ${process.processDefinitionKey})`);
  }
  return true;
}

async function createInstance(client, order, processId, variables, partition, timeoutMs) {
  const value = { bpmnProcessId: processId, variables: JSON.stringify(variables) };
  const record = client.codec.command(
    'PROCESS_INSTANCE_CREATION', 'CREATE_WITH_AWAITING_RESULT', 'ProcessInstanceCreationValue', value);
  const answer = await partita.request(
    client.sender, client.replies, client.config.commandsTopic, partition, record, timeoutMs);
  if (answer === null) {
    console.log(`order ${order}: not ended within ${timeoutMs / 1000} s`
      + ' (are `partita worker` and the job workers running? is there an incident?)');
    return false;
  }
  if (partita.rejection(answer)) {
    console.log(`order ${order}: rejected ${partita.rejection(answer)}`);
    return false;
  }
  const result = partita.unwrap(answer.value);
  console.log(`order ${order}: instance ${result.processInstanceKey} completed with ${result.variables}`);
  return true;
}

let config; // for the error message of a failure

async function main() {
  config = partita.settings(process.argv.slice(2), {
    deploy: { type: 'string', multiple: true, default: [] },
    process: { type: 'string', default: 'order-pricing' },
    count: { type: 'string', default: '5' },
    variables: { type: 'string', default: '{}' },
    timeout: { type: 'string', default: '60' },
  }, USAGE, 'CLIENT');
  const { values } = config;
  const timeoutMs = Number(values.timeout) * 1000;
  const count = Number(values.count);
  const extra = JSON.parse(values.variables);

  const kafka = partita.kafka(config, 'partita-example-producer');
  await partita.requireTopics(kafka, [config.commandsTopic]);
  const admin = kafka.admin();
  await admin.connect();
  const metadata = await admin.fetchTopicMetadata({ topics: [config.commandsTopic] });
  await admin.disconnect();
  const partitions = metadata.topics[0].partitions.length;

  const client = {
    config,
    codec: new partita.Codec(config.schema),
    sender: partita.producer(kafka),
  };
  client.replies = new partita.Replies(kafka, client.codec, config);
  await client.sender.connect();
  await client.replies.start();
  try {
    for (const file of values.deploy) {
      if (!(await deploy(client, file, timeoutMs))) return 1;
    }
    // Creations may go to any partition: spread them, and await all answers at once.
    const created = await Promise.all(Array.from({ length: count }, (_, i) => {
      const order = i + 1;
      const variables = { orderId: order, amount: 25 * order, ...extra };
      return createInstance(client, order, values.process, variables, i % partitions, timeoutMs);
    }));
    const completed = created.filter(Boolean).length;
    if (count > 0) console.log(`${completed} of ${count} instances completed`);
    return completed === count ? 0 : 1;
  } finally {
    await client.replies.stop();
    await client.sender.disconnect();
  }
}

main().then((code) => process.exit(code)).catch((err) => {
  console.error(`producer: ${partita.explain(err, config)}`);
  process.exit(1);
});
