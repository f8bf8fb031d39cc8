package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Numbers in result files without scientific notation for large values (Note [Integers as integers]). */
class PlainNumbersTest {
  private static final ObjectMapper JSON = new ObjectMapper().registerModule(PlainNumbers.MODULE);

  @Test
  void largeValuesAreWrittenInPlainDigitsAndSmallOnesAsBefore() {
    assertEquals("85899345920", PlainNumbers.text(8.589934592E10));
    assertEquals("81910520449.29292", PlainNumbers.text(8.191052044929292E10));
    assertEquals("10000000", PlainNumbers.text(1e7));
    assertEquals("-3665821696", PlainNumbers.text(-3.665821696E9));
    assertEquals("9999999.0", PlainNumbers.text(9_999_999.0));
    assertEquals("512.0", PlainNumbers.text(512.0));
    assertEquals("1.5E-4", PlainNumbers.text(1.5e-4));
    assertEquals("NaN", PlainNumbers.text(Double.NaN));
  }

  @Test
  void jsonHoldsTheSameDigitsAndReadsBackTheSameValues() throws Exception {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("reserved_bytes.mean", 8.589934592E10);
    m.put("largest_free_bytes.mean", 8.191052044929292E10);
    m.put("ratio", 0.25);
    m.put("count", 85899345920L);
    m.put("list", List.of(1.0E20, 3.0));
    String text = JSON.writeValueAsString(m);
    assertEquals("{\"reserved_bytes.mean\":85899345920,\"largest_free_bytes.mean\":81910520449.29292,\"ratio\":0.25,\"count\":85899345920,"
        + "\"list\":[100000000000000000000,3.0]}", text);
    Map<?, ?> back = new ObjectMapper().readValue(text, Map.class);
    assertEquals(8.589934592E10, ((Number) back.get("reserved_bytes.mean")).doubleValue());
    assertEquals(8.191052044929292E10, ((Number) back.get("largest_free_bytes.mean")).doubleValue());
    assertEquals(1.0E20, ((Number) ((List<?>) back.get("list")).get(0)).doubleValue());
  }

  @Test
  void theOldScientificFormReadsAsTheSameValue() throws Exception {
    Map<?, ?> old = new ObjectMapper().readValue("{\"v\": 8.589934592E10}", Map.class);
    Map<?, ?> now = new ObjectMapper().readValue("{\"v\": 85899345920}", Map.class);
    assertEquals(((Number) old.get("v")).doubleValue(), ((Number) now.get("v")).doubleValue());
  }
}
