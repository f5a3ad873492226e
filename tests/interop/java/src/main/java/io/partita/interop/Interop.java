package io.partita.interop;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.generic.GenericRecordBuilder;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Utils;

/**
 * Produces and reads Partita records with nothing but avro/record.avsc, Apache Avro's own
 * single-object encoding (BinaryMessageEncoder/Decoder) and the Kafka Java client.
 *
 * <pre>
 * fingerprint SCHEMA                          little-endian CRC-64-AVRO, hex
 * partition N KEY...                          Kafka's default partition of each key
 * produce BOOTSTRAP NS SCHEMA                 three commands to the ingress topic NS.commands;
 *                                             prints partition/offset of each
 * consume BOOTSTRAP TOPIC SCHEMA COUNT        prints each record as JSON, one per line
 * </pre>
 *
 * <p>Clients write commands to {@code <ns>.commands}, never to {@code <ns>.log}: only the engine
 * writes the log (docs/producing.md).
 */
public final class Interop {
  private static final long FIRST_KEY_OF_PARTITION_1 = 2251799813685249L;

  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "fingerprint" -> fingerprint(load(args[1]));
      case "partition" -> {
        int n = Integer.parseInt(args[1]);
        for (int i = 2; i < args.length; i++) {
          byte[] key = args[i].getBytes(StandardCharsets.UTF_8);
          System.out.println(Utils.toPositive(Utils.murmur2(key)) % n);
        }
      }
      case "produce" -> produce(args[1], args[2], load(args[3]));
      case "consume" -> consume(args[1], args[2], load(args[3]), Integer.parseInt(args[4]));
      default -> throw new IllegalArgumentException("unknown mode " + args[0]);
    }
  }

  private static Schema load(String path) throws Exception {
    return new Schema.Parser().parse(new File(path));
  }

  private static void fingerprint(Schema schema) {
    long fp = SchemaNormalization.parsingFingerprint64(schema);
    StringBuilder hex = new StringBuilder();
    for (int i = 0; i < 8; i++) {
      hex.append(String.format("%02x", (fp >>> (8 * i)) & 0xff));
    }
    System.out.println(hex);
  }

  private static Schema branch(Schema envelope, String name) {
    for (Schema s : envelope.getField("value").schema().getTypes()) {
      if (s.getName().equals(name)) {
        return s;
      }
    }
    throw new IllegalArgumentException("no value branch " + name);
  }

  private static GenericRecord envelope(
      Schema schema, String valueType, String intent, long key, int partitionId, GenericRecord value) {
    Schema rt = schema.getField("recordType").schema();
    Schema vt = schema.getField("valueType").schema();
    Schema it = schema.getField("intent").schema();
    return new GenericRecordBuilder(schema)
        .set("partitionId", partitionId)
        .set("key", key)
        .set("recordType", new GenericData.EnumSymbol(rt, "COMMAND"))
        .set("valueType", new GenericData.EnumSymbol(vt, valueType))
        .set("intent", new GenericData.EnumSymbol(it, intent))
        .set("timestamp", 1764000000000L)
        .set("engineVersion", "java-interop")
        .set("value", value)
        .build();
  }

  private static void produce(String bootstrap, String namespace, Schema schema) throws Exception {
    String topic = namespace + ".commands";
    BinaryMessageEncoder<GenericRecord> encoder = new BinaryMessageEncoder<>(GenericData.get(), schema);
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    props.put("key.serializer", ByteArraySerializer.class.getName());
    props.put("value.serializer", ByteArraySerializer.class.getName());
    props.put("enable.idempotence", "true");

    GenericRecord message = new GenericRecordBuilder(branch(schema, "MessageValue"))
        .set("name", "payment-received")
        .set("correlationKey", "order-4711")
        .set("timeToLive", 60000L)
        .set("variables", "{\"amount\": 99.5}")
        .set("messageId", "m-1")
        .build();
    GenericRecord creation = new GenericRecordBuilder(branch(schema, "ProcessInstanceCreationValue"))
        .set("bpmnProcessId", "order-process")
        .set("variables", "{\"orderId\": 4711}")
        .set("fetchVariables", List.of("total"))
        .build();
    long jobKey = FIRST_KEY_OF_PARTITION_1 + 41;
    GenericRecord job = new GenericRecordBuilder(branch(schema, "JobValue"))
        .set("variables", "{\"paid\": true}")
        .set("customHeaders", Map.of("source", "java"))
        .build();

    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      // A message goes by the Java default partitioner over its correlation key: no partition set.
      send(producer, new ProducerRecord<>(topic, null, "order-4711".getBytes(StandardCharsets.UTF_8),
          bytes(encoder, envelope(schema, "MESSAGE", "PUBLISH", -1, -1, message))),
          "MESSAGE", "PUBLISH");
      send(producer, new ProducerRecord<>(topic, 0, null,
          bytes(encoder, envelope(schema, "PROCESS_INSTANCE_CREATION", "CREATE", -1, -1, creation))),
          "PROCESS_INSTANCE_CREATION", "CREATE");
      int jobPartition = (int) (jobKey >> 51) - 1;
      send(producer, new ProducerRecord<>(topic, jobPartition, null,
          bytes(encoder, envelope(schema, "JOB", "COMPLETE", jobKey, jobPartition + 1, job))),
          "JOB", "COMPLETE");
    }
  }

  private static byte[] bytes(BinaryMessageEncoder<GenericRecord> encoder, GenericRecord record)
      throws Exception {
    ByteBuffer buffer = encoder.encode(record);
    byte[] out = new byte[buffer.remaining()];
    buffer.get(out);
    return out;
  }

  private static void send(
      KafkaProducer<byte[], byte[]> producer, ProducerRecord<byte[], byte[]> record,
      String valueType, String intent) throws Exception {
    record.headers().add("recordType", "COMMAND".getBytes(StandardCharsets.UTF_8));
    record.headers().add("valueType", valueType.getBytes(StandardCharsets.UTF_8));
    record.headers().add("intent", intent.getBytes(StandardCharsets.UTF_8));
    RecordMetadata meta = producer.send(record).get();
    System.out.printf("{\"partition\": %d, \"offset\": %d}%n", meta.partition(), meta.offset());
  }

  private static void consume(String bootstrap, String topic, Schema schema, int count) {
    BinaryMessageDecoder<GenericRecord> decoder = new BinaryMessageDecoder<>(GenericData.get(), schema);
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    props.put("isolation.level", "read_committed");
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
      List<TopicPartition> partitions = new ArrayList<>();
      consumer.partitionsFor(topic).forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      int seen = 0;
      long deadline = System.currentTimeMillis() + 30000;
      while (seen < count && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          GenericRecord record = decoder.decode(r.value());
          Header intent = r.headers().lastHeader("intent");
          System.out.println("{\"offset\": " + r.offset() + ", \"headerIntent\": \""
              + new String(intent.value(), StandardCharsets.UTF_8) + "\", \"record\": " + record + "}");
          seen++;
        }
      }
      if (seen < count) {
        throw new IllegalStateException("read " + seen + " of " + count + " records");
      }
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }
}
