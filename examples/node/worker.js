'use strict';
// A job worker (docs/jobs.md, "Push"): consumes `<ns>.jobs.<type>` in the consumer group
// `<ns>.workers.<type>`, runs the handler on each pushed job and answers JOB COMPLETE (JOB FAIL
// when the handler throws) on the ingress topic `<ns>.commands`, in the partition of the job's
// key, with reply headers to print the outcome.
// A job's offset is committed after its answer is sent: a worker that dies before leaves the job
// to time out and be pushed again. Ctrl-C finishes the job in hand, commits and leaves the group.
const partita = require('./partita');

const USAGE = `usage: node worker.js [--job-type TYPE] [--max-jobs N]
  --job-type TYPE    job type to work on (default notify)
  --max-jobs N       stop after answering N jobs (default 0: run until Ctrl-C)`;

const REPLY_TIMEOUT_MS = 30000;
const RETRY_BACKOFF_MS = 1000n;

/**
 * The handler of `notify` jobs: tells the customer the price the Java worker computed. Returns
 * the variables to complete the job with; throwing fails the job with one retry less.
 */
function notify(job) {
  const { orderId, price } = job.variables;
  if (price === undefined) throw new Error('the order has no price yet');
  const notification = `Order ${orderId}: ${Number(price).toFixed(2)} charged, tax included`;
  return { notified: true, notification };
}

/** The job as a handler sees it: a JobValue of a pushed JOB_BATCH ACTIVATED, variables parsed. */
function activatedJob(key, job) {
  return {
    key,
    type: job.type,
    variables: JSON.parse(job.variables),
    customHeaders: job.customHeaders,
    retries: job.retries,
    deadline: job.deadline,
    processInstanceKey: job.processInstanceKey,
    bpmnProcessId: job.bpmnProcessId,
    elementId: job.elementId,
  };
}

class Worker {
  constructor(config, handler, maxJobs) {
    this.config = config;
    this.handler = handler;
    this.maxJobs = maxJobs;
    this.codec = new partita.Codec(config.schema);
    this.kafka = partita.kafka(config, `partita-example-worker-${config.values['job-type']}`);
    this.sender = partita.producer(this.kafka);
    this.replies = new partita.Replies(this.kafka, this.codec, config);
    this.consumer = this.kafka.consumer({ groupId: this.group, readUncommitted: false });
    this.stats = { answered: 0, completed: 0, failed: 0, rejected: 0 };
    this.stopped = new Promise((resolve) => { this.onStopped = resolve; });
  }

  get jobTopic() { return `${this.config.namespace}.jobs.${this.config.values['job-type']}`; }

  get group() { return `${this.config.namespace}.workers.${this.config.values['job-type']}`; }

  async start() {
    await partita.requireTopics(this.kafka, [this.jobTopic, this.config.commandsTopic]);
    await this.sender.connect();
    await this.replies.start();
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.jobTopic, fromBeginning: true });
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart) { // kafkajs gave up: say so and leave, rather than sit idle
        console.error(`node worker: the consumer failed for good: ${partita.explain(payload.error, this.config)}`);
        this.failed = true;
        this.stop();
      }
    });
    await this.consumer.run({ eachMessage: ({ message }) => this.handleMessage(message) });
  }

  /** Stops after the job in hand: kafkajs then runs no further message, commits and leaves. */
  stop() {
    if (!this.stopping) {
      this.stopping = (async () => {
        await this.consumer.disconnect();
        await this.replies.stop();
        await this.sender.disconnect();
        this.onStopped();
      })();
    }
    return this.stopping;
  }

  async handleMessage(message) {
    const record = this.codec.decode(message.value);
    if (record.valueType !== 'JOB_BATCH' || record.intent !== 'ACTIVATED') return;
    const batch = partita.unwrap(record.value);
    for (const [i, key] of batch.jobKeys.entries()) {
      const job = activatedJob(key, batch.jobs[i]);
      if (job.deadline >= 0n && job.deadline < BigInt(Date.now())) {
        console.log(`skipped job ${job.key}: its deadline passed, it will be pushed again`);
        continue;
      }
      await this.answer(job);
    }
    if (this.maxJobs > 0 && this.stats.answered >= this.maxJobs) this.stop(); // not awaited: see stop()
  }

  async answer(job) {
    let intent;
    let value;
    let detail;
    try {
      const variables = JSON.stringify((await this.handler(job)) ?? {});
      [intent, value, detail] = ['COMPLETE', { variables }, variables];
    } catch (err) {
      const retries = Math.max(job.retries - 1, 0);
      value = { retries, errorMessage: String(err), retryBackoff: RETRY_BACKOFF_MS };
      [intent, detail] = ['FAIL', `${err} (retries left: ${retries})`];
    }
    const command = this.codec.command('JOB', intent, 'JobValue', value, job.key);
    const partition = partita.partitionOfKey(job.key);
    const reply = await partita.request(
      this.sender, this.replies, this.config.commandsTopic, partition, command, REPLY_TIMEOUT_MS);
    this.stats.answered += 1;
    const where = `job ${job.key} of instance ${job.processInstanceKey} (${job.elementId})`;
    if (reply === null) {
      console.log(`no reply for job ${job.key} within ${REPLY_TIMEOUT_MS / 1000} s:`
        + ' is a `partita worker` running?');
    } else if (partita.rejection(reply)) {
      this.stats.rejected += 1;
      console.log(`rejected JOB ${intent} of job ${job.key}: ${partita.rejection(reply)}`);
    } else if (intent === 'COMPLETE') {
      this.stats.completed += 1;
      console.log(`completed ${where}: ${detail}`);
    } else {
      this.stats.failed += 1;
      console.log(`failed ${where}: ${detail}`);
    }
  }

  summary() {
    const s = this.stats;
    return `${s.answered} jobs answered: ${s.completed} completed, ${s.failed} failed, ${s.rejected} rejected`;
  }
}

let config; // for the error message of a failure

async function main() {
  config = partita.settings(process.argv.slice(2), {
    'job-type': { type: 'string', default: 'notify' },
    'max-jobs': { type: 'string', default: '0' },
  }, USAGE, 'JOB_WORKER');
  const maxJobs = Number(config.values['max-jobs']);
  const worker = new Worker(config, notify, maxJobs);
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => worker.stop());
  await worker.start();
  const until = maxJobs > 0 ? `stopping after ${maxJobs} jobs` : 'Ctrl-C to stop';
  console.log(`node worker: ${config.values['job-type']} jobs from ${worker.jobTopic}`
    + ` (group ${worker.group}) at ${partita.cluster(config)}, ${until}`);
  await worker.stopped;
  console.log(`node worker stopped: ${worker.summary()}`);
  return worker.failed ? 1 : 0;
}

main().then((code) => process.exit(code)).catch((err) => {
  console.error(`node worker: ${partita.explain(err, config)}`);
  process.exit(1);
});
