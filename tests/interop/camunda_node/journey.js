// @camunda8/sdk 8.8.13 (unchanged, public API only) against `partita gateway`, run by
// tests/gateway/test_node.py:
//
//   ZEEBE_GRPC_ADDRESS=grpc://127.0.0.1:P1 ZEEBE_REST_ADDRESS=http://127.0.0.1:P2 \
//   CAMUNDA_AUTH_STRATEGY=NONE node journey.js BPMN_DIR
//
// Prints one JSON line per step: {"step": name, ...result} or {"step": name, "error": message}
// (the journey goes on after an error, so that one run shows every step), and exits 1 when a
// step failed. The gRPC client: topology, deployResource (by file name and from a buffer), a
// job worker, createProcessInstanceWithResult, publishMessage. The REST clients do what Camunda
// Modeler's deploy and run buttons do: getTopology, deployResources, createProcessInstance, with
// the 8.7-style CamundaRestClient and with the Orchestration Cluster API client.
const fs = require('node:fs');
const path = require('node:path');
const { Camunda8 } = require('@camunda8/sdk');

let failed = false;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function step(name, run) {
  try {
    console.log(JSON.stringify({ step: name, ...(await run()) }));
  } catch (error) {
    failed = true;
    console.log(JSON.stringify({ step: name, error: String(error.message ?? error) }));
  }
}

const brief = (topology) => ({
  brokers: topology.brokers.length,
  partitions: topology.partitionsCount,
  version: topology.gatewayVersion,
});

async function main(bpmnDir) {
  const c8 = new Camunda8(); // configured by the environment only
  const zeebe = c8.getZeebeGrpcApiClient();
  const rest = c8.getCamundaRestClient();
  const oca = c8.getOrchestrationClusterApiClient();
  const double = fs.readFileSync(path.join(bpmnDir, 'double.bpmn'));

  await step('grpc-topology', async () => brief(await zeebe.topology()));
  await step('grpc-deploy-file', async () => {
    // the SDK names the resource by the path it was given, as Zeebe's Java client does
    const deployed = await zeebe.deployResource({
      processFilename: path.join(bpmnDir, 'double.bpmn'),
    });
    return { processes: deployed.deployments.map((d) => d.process.bpmnProcessId) };
  });
  await step('grpc-deploy-buffer', async () => {
    const process = fs.readFileSync(path.join(bpmnDir, 'wait.bpmn'));
    const deployed = await zeebe.deployResource({ process, name: 'wait.bpmn' });
    return { processes: deployed.deployments.map((d) => d.process.bpmnProcessId) };
  });

  await step('rest-topology', async () => brief(await rest.getTopology()));
  await step('rest-deploy', async () => {
    const deployed = await rest.deployResources([{ content: double, name: 'double.bpmn' }]);
    return {
      key: String(deployed.deploymentKey),
      processes: deployed.processes.map((p) => p.processDefinitionId),
    };
  });
  await step('rest-create', async () => {
    const created = await rest.createProcessInstance({
      processDefinitionId: 'gw-double',
      variables: { amount: 5 },
    });
    return { key: String(created.processInstanceKey) };
  });

  await step('oca-topology', async () => brief(await oca.getTopology()));
  await step('oca-deploy', async () => {
    const resources = [new File([double], 'double.bpmn')];
    const deployed = await oca.createDeployment({ resources });
    return {
      key: String(deployed.deploymentKey),
      processes: deployed.processes.map((p) => p.processDefinitionId),
    };
  });
  await step('oca-create', async () => {
    const created = await oca.createProcessInstance({
      processDefinitionId: 'gw-double',
      variables: { amount: 7 },
    });
    return { key: String(created.processInstanceKey) };
  });

  // the worker also completes the instances the REST clients created
  const worker = zeebe.createWorker({
    taskType: 'gw-double',
    id: 'node-worker', // the worker's name in ActivateJobs
    taskHandler: (job) =>
      job.complete({
        amount: job.variables.amount * Number(job.customHeaders.factor),
        by: job.worker,
      }),
  });
  await step('grpc-run-with-result', async () => {
    const result = await zeebe.createProcessInstanceWithResult({
      bpmnProcessId: 'gw-double',
      variables: { amount: 21 },
      requestTimeout: 30_000,
    });
    return { key: result.processInstanceKey, variables: result.variables };
  });
  await step('grpc-message', async () => {
    const waiting = zeebe.createProcessInstanceWithResult({
      bpmnProcessId: 'gw-wait',
      variables: { orderId: 'o-7' },
      requestTimeout: 30_000,
    });
    waiting.catch(() => {}); // awaited below, unless publishing fails first
    await sleep(1000); // the instance subscribes to the message first
    const published = await zeebe.publishMessage({
      name: 'gw-paid',
      correlationKey: 'o-7',
      variables: { paidBy: 'card' },
      timeToLive: 10_000,
    });
    const done = await waiting;
    return { key: published.key, instance: done.processInstanceKey, variables: done.variables };
  });
  await worker.close();
  await zeebe.close();
}

main(process.argv[2]).then(
  () => process.exit(failed ? 1 : 0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
