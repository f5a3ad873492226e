package io.partita.examples.worker;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.generic.GenericRecordBuilder;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.kafka.common.header.Headers;

/**
 * Partita's wire format as docs/producing.md describes it: one Avro {@code Record} per Kafka
 * record in single-object encoding (which Avro's BinaryMessageEncoder writes exactly), three
 * filter headers, and partitions derived from 64-bit keys.
 */
final class PartitaCodec {
  private static final String PROTOCOL = "io.partita.protocol.";
  private static final String ENGINE_VERSION = "java-example/1.0";

  private final Schema schema;
  private final BinaryMessageEncoder<GenericRecord> encoder;
  private final BinaryMessageDecoder<GenericRecord> decoder;

  private PartitaCodec(Schema schema) {
    this.schema = schema;
    this.encoder = new BinaryMessageEncoder<>(GenericData.get(), schema);
    this.decoder = new BinaryMessageDecoder<>(GenericData.get(), schema);
  }

  /** The codec of the schema packaged into the jar from the repository's avro/record.avsc. */
  static PartitaCodec fromClasspath() throws IOException {
    try (InputStream in = PartitaCodec.class.getResourceAsStream("/record.avsc")) {
      if (in == null) {
        throw new IOException("record.avsc is not on the classpath; build with `mvn package`");
      }
      return new PartitaCodec(new Schema.Parser().parse(in));
    }
  }

  /** The log partition of an entity: its partition id is in the key's top 13 bits. */
  static int partitionOfKey(long key) {
    return (int) (key >> 51) - 1;
  }

  /** A builder of one value branch (e.g. "JobValue"); unset fields take the schema default. */
  GenericRecordBuilder value(String branch) {
    for (Schema type : schema.getField("value").schema().getTypes()) {
      if (type.getFullName().equals(PROTOCOL + branch)) {
        return new GenericRecordBuilder(type);
      }
    }
    throw new IllegalArgumentException("the schema has no value branch " + branch);
  }

  /** A command about the entity {@code key}, addressed to that entity's partition. */
  GenericRecord command(String valueType, String intent, long key, GenericRecord value) {
    return new GenericRecordBuilder(schema)
        .set("partitionId", partitionOfKey(key) + 1)
        .set("key", key)
        .set("recordType", symbol("recordType", "COMMAND"))
        .set("valueType", symbol("valueType", valueType))
        .set("intent", symbol("intent", intent))
        .set("timestamp", System.currentTimeMillis())
        .set("engineVersion", ENGINE_VERSION)
        .set("value", value)
        .build();
  }

  byte[] encode(GenericRecord record) throws IOException {
    ByteBuffer buffer = encoder.encode(record);
    byte[] out = new byte[buffer.remaining()];
    buffer.get(out);
    return out;
  }

  /** Decodes a record; throws when its fingerprint is not this schema's (a newer engine). */
  GenericRecord decode(byte[] bytes) throws IOException {
    return decoder.decode(bytes);
  }

  /** The three filter headers every Partita record carries. */
  static void addHeaders(Headers headers, GenericRecord record) {
    headers.add("recordType", ascii(record.get("recordType")));
    headers.add("valueType", ascii(record.get("valueType")));
    headers.add("intent", ascii(record.get("intent")));
  }

  /** Whether a record is {@code valueType intent}, e.g. JOB_BATCH ACTIVATED. */
  static boolean is(GenericRecord record, String valueType, String intent) {
    return valueType.equals(record.get("valueType").toString())
        && intent.equals(record.get("intent").toString());
  }

  private GenericData.EnumSymbol symbol(String field, String name) {
    return new GenericData.EnumSymbol(schema.getField(field).schema(), name);
  }

  private static byte[] ascii(Object value) {
    return value.toString().getBytes(StandardCharsets.US_ASCII);
  }
}
