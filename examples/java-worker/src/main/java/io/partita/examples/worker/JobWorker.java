package io.partita.examples.worker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Future;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A job worker for one job type (docs/jobs.md, "Push"): consumes {@code <ns>.jobs.<type>} in the
 * consumer group {@code <ns>.workers.<type>}, runs the handler on each pushed job and answers
 * with JOB COMPLETE (or JOB FAIL when the handler throws) on the ingress topic
 * {@code <ns>.commands}, in the partition of the job's key.
 *
 * <p>Offsets are committed once a poll's answers are sent, so a job is answered at least once; a
 * worker that dies before answering leaves the job to time out and be pushed again. Each answer
 * carries reply headers, so the worker prints what the engine made of it.
 */
final class JobWorker implements AutoCloseable {
  private static final Duration REPLY_TIMEOUT = Duration.ofSeconds(30);

  /** One answer sent: which job, which command, and what to print when the engine agrees. */
  private record Answer(ActivatedJob job, String intent, String detail) {}

  private final Settings settings;
  private final JobHandler handler;
  private final PartitaCodec codec;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final KafkaProducer<byte[], byte[]> producer;
  private final Replies replies;
  private volatile boolean stopping;
  private int answered;
  private int completed;
  private int failed;
  private int rejected;

  JobWorker(Settings settings, PartitaCodec codec, JobHandler handler) {
    this.settings = settings;
    this.codec = codec;
    this.handler = handler;
    this.consumer = new KafkaConsumer<>(settings.client(Map.of(
        "group.id", settings.group(),
        "isolation.level", "read_committed", // only jobs the engine committed
        "auto.offset.reset", "earliest", // jobs pushed before the group existed
        "enable.auto.commit", "false",
        "key.deserializer", ByteArrayDeserializer.class.getName(),
        "value.deserializer", ByteArrayDeserializer.class.getName())));
    this.producer = new KafkaProducer<>(settings.client(Map.of(
        "enable.idempotence", "true",
        "linger.ms", "5",
        "key.serializer", ByteArraySerializer.class.getName(),
        "value.serializer", ByteArraySerializer.class.getName())));
    this.replies = new Replies(settings, codec);
  }

  /** Works until {@link #stop()} or until {@code maxJobs} jobs are answered. */
  void run() throws Exception {
    if (consumer.partitionsFor(settings.jobTopic()).isEmpty()) {
      throw new IllegalStateException("there is no topic " + settings.jobTopic()
          + ", so the engine does not push these jobs: create it with"
          + " `partita topics apply --job-type " + settings.jobType() + "`");
    }
    if (consumer.partitionsFor(settings.commandsTopic()).isEmpty()) {
      throw new IllegalStateException("there is no topic " + settings.commandsTopic()
          + ", where the engine reads the answers: run `partita topics apply`");
    }
    consumer.subscribe(List.of(settings.jobTopic()));
    while (!stopping && !enough()) {
      Map<TopicPartition, OffsetAndMetadata> handled = new HashMap<>();
      Map<String, Answer> inFlight = new LinkedHashMap<>();
      List<Future<RecordMetadata>> sends = new ArrayList<>();
      for (ConsumerRecord<byte[], byte[]> message : consumer.poll(Duration.ofMillis(500))) {
        if (stopping || enough()) {
          break; // the rest stays uncommitted: the group hands it to the next worker
        }
        GenericRecord record = codec.decode(message.value());
        if (PartitaCodec.is(record, "JOB_BATCH", "ACTIVATED")) {
          for (ActivatedJob job : jobsOf((GenericRecord) record.get("value"))) {
            if (job.expired(System.currentTimeMillis())) {
              System.out.printf(
                  "skipped job %d: its deadline passed, it will be pushed again%n", job.key());
              continue;
            }
            String correlationId = UUID.randomUUID().toString();
            inFlight.put(correlationId, answer(job, correlationId, sends));
          }
        }
        TopicPartition tp = new TopicPartition(message.topic(), message.partition());
        handled.put(tp, new OffsetAndMetadata(message.offset() + 1));
      }
      if (handled.isEmpty()) {
        continue;
      }
      producer.flush();
      for (Future<RecordMetadata> send : sends) {
        send.get(); // throws if ingress did not take the answer: better stop than lose it
      }
      consumer.commitSync(handled);
      report(inFlight, replies.await(inFlight.keySet(), REPLY_TIMEOUT));
    }
  }

  /** Asks {@link #run()} to return after the job in hand; safe from any thread. */
  void stop() {
    stopping = true;
  }

  String summary() {
    return String.format(
        "%d jobs answered: %d completed, %d failed, %d rejected", answered, completed, failed, rejected);
  }

  private boolean enough() {
    return settings.maxJobs() > 0 && answered >= settings.maxJobs();
  }

  @SuppressWarnings("unchecked")
  private static List<ActivatedJob> jobsOf(GenericRecord batch) throws Exception {
    List<Long> keys = (List<Long>) batch.get("jobKeys");
    List<GenericRecord> jobs = (List<GenericRecord>) batch.get("jobs");
    List<ActivatedJob> out = new ArrayList<>();
    for (int i = 0; i < keys.size(); i++) {
      out.add(ActivatedJob.of(keys.get(i), jobs.get(i)));
    }
    return out;
  }

  private Answer answer(ActivatedJob job, String correlationId, List<Future<RecordMetadata>> sends)
      throws Exception {
    GenericRecord value;
    Answer answer;
    try {
      Map<String, Object> variables = handler.handle(job);
      String json = ActivatedJob.JSON.writeValueAsString(variables == null ? Map.of() : variables);
      value = codec.value("JobValue").set("variables", json).build();
      answer = new Answer(job, "COMPLETE", json);
    } catch (Exception e) {
      int retriesLeft = Math.max(job.retries() - 1, 0);
      value = codec.value("JobValue")
          .set("retries", retriesLeft)
          .set("errorMessage", String.valueOf(e))
          .set("retryBackoff", 1000L)
          .build();
      answer = new Answer(job, "FAIL", e + " (retries left: " + retriesLeft + ")");
    }
    GenericRecord command = codec.command("JOB", answer.intent(), job.key(), value);
    ProducerRecord<byte[], byte[]> message = new ProducerRecord<>(
        settings.commandsTopic(), PartitaCodec.partitionOfKey(job.key()), null, codec.encode(command));
    PartitaCodec.addHeaders(message.headers(), command);
    replies.address(message.headers(), correlationId);
    sends.add(producer.send(message));
    answered++;
    return answer;
  }

  private void report(Map<String, Answer> inFlight, Map<String, GenericRecord> answers) {
    inFlight.forEach((correlationId, answer) -> {
      ActivatedJob job = answer.job();
      GenericRecord reply = answers.get(correlationId);
      if (reply == null) {
        System.out.printf("no reply for job %d within %d s: is a `partita worker` running?%n",
            job.key(), REPLY_TIMEOUT.toSeconds());
      } else if (reply.get("recordType").toString().equals("COMMAND_REJECTION")) {
        rejected++;
        System.out.printf("rejected JOB %s of job %d: %s %s%n",
            answer.intent(), job.key(), reply.get("rejectionType"), reply.get("rejectionReason"));
      } else if (answer.intent().equals("COMPLETE")) {
        completed++;
        System.out.printf("completed job %d of instance %d (%s): %s%n",
            job.key(), job.processInstanceKey(), job.elementId(), answer.detail());
      } else {
        failed++;
        System.out.printf("failed job %d of instance %d (%s): %s%n",
            job.key(), job.processInstanceKey(), job.elementId(), answer.detail());
      }
    });
    System.out.flush();
  }

  @Override
  public void close() {
    consumer.close(); // leaves the group at once, so its partitions move without a timeout
    producer.close();
    replies.close();
  }
}
