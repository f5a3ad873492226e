package io.partita.examples.worker;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.avro.generic.GenericRecord;

/**
 * One job as the engine pushed it: a {@code JobValue} of a JOB_BATCH ACTIVATED record, with its
 * variables parsed (numbers with a fraction as BigDecimal, so money stays exact).
 */
record ActivatedJob(
    long key,
    String type,
    Map<String, Object> variables,
    Map<String, String> customHeaders,
    int retries,
    long deadline,
    long processInstanceKey,
    String bpmnProcessId,
    String elementId) {

  static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);

  static ActivatedJob of(long key, GenericRecord job) throws JsonProcessingException {
    @SuppressWarnings("unchecked")
    Map<String, Object> variables = JSON.readValue(job.get("variables").toString(), Map.class);
    Map<String, String> headers = new LinkedHashMap<>();
    ((Map<?, ?>) job.get("customHeaders")).forEach((k, v) -> headers.put(k.toString(), v.toString()));
    return new ActivatedJob(
        key,
        job.get("type").toString(),
        variables,
        headers,
        (Integer) job.get("retries"),
        (Long) job.get("deadline"),
        (Long) job.get("processInstanceKey"),
        job.get("bpmnProcessId").toString(),
        job.get("elementId").toString());
  }

  /** True once the activation timed out: the engine pushes the job again, so skip this copy. */
  boolean expired(long nowMillis) {
    return deadline >= 0 && deadline < nowMillis;
  }
}
