package io.partita.examples.worker;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Answers to our commands (docs/producing.md, "Replies"): each command names one partition of
 * {@code <ns>.replies} and a correlation id; this reads that partition from its end as it was
 * before the first command, so it sees every answer and nothing older.
 */
final class Replies implements AutoCloseable {
  private final PartitaCodec codec;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final String topic;
  private final int partition;

  /** Reads {@code settings.repliesTopic()}; assigned a partition, so it joins no group. */
  Replies(Settings settings, PartitaCodec codec) {
    this.codec = codec;
    this.topic = settings.repliesTopic();
    this.consumer = new KafkaConsumer<>(settings.client(Map.of(
        "key.deserializer", ByteArrayDeserializer.class.getName(),
        "value.deserializer", ByteArrayDeserializer.class.getName(),
        "isolation.level", "read_committed",
        "enable.auto.commit", "false")));
    int partitions = consumer.partitionsFor(topic).size();
    if (partitions == 0) {
      throw new IllegalStateException("there is no topic " + topic + ": run `partita topics apply`");
    }
    this.partition = ThreadLocalRandom.current().nextInt(partitions);
    TopicPartition tp = new TopicPartition(topic, partition);
    consumer.assign(List.of(tp));
    consumer.seekToEnd(List.of(tp));
    consumer.position(tp); // resolve the end now, before any command is sent
  }

  /** The reply headers to put on a command answered under {@code correlationId}. */
  void address(Headers headers, String correlationId) {
    headers.add("kafka_replyTopic", topic.getBytes(StandardCharsets.UTF_8));
    headers.add("kafka_replyPartition", ByteBuffer.allocate(4).putInt(partition).array());
    headers.add("kafka_correlationId", correlationId.getBytes(StandardCharsets.UTF_8));
  }

  /** The replies to {@code wanted} that arrive within {@code timeout}; late ones are absent. */
  Map<String, GenericRecord> await(Set<String> wanted, Duration timeout) throws Exception {
    Map<String, GenericRecord> found = new HashMap<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (found.size() < wanted.size() && System.nanoTime() < deadline) {
      for (ConsumerRecord<byte[], byte[]> message : consumer.poll(Duration.ofMillis(200))) {
        Header id = message.headers().lastHeader("kafka_correlationId");
        if (id == null) {
          continue;
        }
        String correlationId = new String(id.value(), StandardCharsets.UTF_8);
        if (wanted.contains(correlationId)) { // others answer commands we gave up waiting for
          found.put(correlationId, codec.decode(message.value()));
        }
      }
    }
    return found;
  }

  @Override
  public void close() {
    consumer.close();
  }
}
