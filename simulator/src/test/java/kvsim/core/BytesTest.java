package kvsim.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** Sizes parse with binary and decimal units and reject anything else. */
class BytesTest {
  @Test
  void binaryAndDecimalUnitsParse() {
    assertEquals(85_899_345_920L, Bytes.parse("80GiB"));
    assertEquals(40_000_000_000L, Bytes.parse("40GB"));
    assertEquals(512 * 1024L, Bytes.parse("512KiB"));
    assertEquals(4096, Bytes.parse("4096"));
    assertEquals(1536 * 1024L * 1024L, Bytes.parse("1.5GiB"));
  }

  @Test
  void junkAndFractionsOfBytesAreRejected() {
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("eighty"));
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("1.5"));
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("-4KiB"));
    assertThrows(IllegalArgumentException.class, () -> Bytes.parse("99999999TiB"));
  }
}
