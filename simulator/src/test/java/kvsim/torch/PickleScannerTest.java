package kvsim.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import kvsim.core.InputException;
import kvsim.testing.SharedData;
import net.razorvine.pickle.Unpickler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The opcode walker refuses code-running pickles before anything is unpickled. */
class PickleScannerTest {

  private static byte[] bytes(int... b) {
    byte[] out = new byte[b.length];
    for (int i = 0; i < b.length; i++) {
      out[i] = (byte) b[i];
    }
    return out;
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] p : parts) {
      out.writeBytes(p);
    }
    return out.toByteArray();
  }

  @Test
  void theClassicOsSystemExploitIsRefusedAtItsGlobal() {
    byte[] evil = "cos\nsystem\n(S'echo pwned'\ntR.".getBytes(StandardCharsets.US_ASCII);
    PickleScanner.Refused e = assertThrows(PickleScanner.Refused.class, () -> PickleScanner.scan(evil));
    assertTrue(e.getMessage().contains("GLOBAL at byte 0"), e.getMessage());
  }

  @Test
  void aProtocolFourStackGlobalIsRefused() {
    // PROTO 4, SHORT_BINUNICODE "os", SHORT_BINUNICODE "system", STACK_GLOBAL, ...
    byte[] evil = concat(bytes(0x80, 4, 0x8c, 2), "os".getBytes(), bytes(0x8c, 6), "system".getBytes(), bytes(0x93, ')', 'R', '.'));
    PickleScanner.Refused e = assertThrows(PickleScanner.Refused.class, () -> PickleScanner.scan(evil));
    assertTrue(e.getMessage().contains("STACK_GLOBAL"), e.getMessage());
  }

  @ParameterizedTest(name = "opcode 0x{0} is refused")
  @ValueSource(strings = {"52", "62", "69", "6f", "81", "92", "82", "51"})
  void everyCodeRunningOpcodeIsRefused(String hex) {
    byte[] p = bytes(0x80, 2, Integer.parseInt(hex, 16), '.');
    PickleScanner.Refused e = assertThrows(PickleScanner.Refused.class, () -> PickleScanner.scan(p));
    assertTrue(e.getMessage().startsWith("refused: opcode"), e.getMessage());
  }

  @Test
  void aStringThatLooksLikeAnOpcodeIsSkippedByItsLength() throws Exception {
    // BINUNICODE of "cR" (GLOBAL and REDUCE bytes as data) is harmless.
    byte[] p = concat(bytes(0x80, 2, 'X', 2, 0, 0, 0), "cR".getBytes(), bytes('.'));
    assertEquals(3, PickleScanner.scan(p));
  }

  @Test
  void truncatedAndUnknownInputIsNotAPickle() {
    assertTrue(assertThrows(PickleScanner.Refused.class, () -> PickleScanner.scan(bytes(0x80, 2, 'X', 9, 0, 0, 0, 'a'))).getMessage().contains("runs past the end"));
    assertTrue(assertThrows(PickleScanner.Refused.class, () -> PickleScanner.scan(bytes(0x80, 2, 0xff))).getMessage().contains("unknown opcode 0xff"));
    assertTrue(assertThrows(PickleScanner.Refused.class, () -> PickleScanner.scan(bytes(0x80, 2, 'N'))).getMessage().contains("no STOP"));
  }

  @Test
  void theReaderRefusesADangerousPickleWithTheFileName() {
    byte[] evil = "cos\nsystem\n(S'echo pwned'\ntR.".getBytes(StandardCharsets.US_ASCII);
    InputException e = assertThrows(InputException.class, () -> SnapshotReader.read("evil.pickle", evil));
    assertTrue(e.getMessage().startsWith("evil.pickle: refused: opcode GLOBAL"), e.getMessage());
  }

  @Test
  void theWritersPicklesUseOnlyPlainOpcodesAndReadBack() throws Exception {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("int", 7);
    m.put("negative", -5L);
    m.put("big", 140497258283008L);
    m.put("huge", -(1L << 62));
    m.put("float", 0.25);
    m.put("str", "héllo");
    m.put("none", null);
    m.put("yes", true);
    m.put("tuple", new Object[] {0, 0});
    m.put("list", java.util.stream.IntStream.range(0, 2500).boxed().toList());
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PickleWriter.write(m, out);
    byte[] p = out.toByteArray();
    PickleScanner.scan(p);
    @SuppressWarnings("unchecked")
    Map<String, Object> back = (Map<String, Object>) new Unpickler().loads(p);
    assertEquals(7, ((Number) back.get("int")).intValue());
    assertEquals(-5L, ((Number) back.get("negative")).longValue());
    assertEquals(140497258283008L, ((Number) back.get("big")).longValue());
    assertEquals(-(1L << 62), ((Number) back.get("huge")).longValue());
    assertEquals(0.25, back.get("float"));
    assertEquals("héllo", back.get("str"));
    assertEquals(null, back.get("none"));
    assertEquals(true, back.get("yes"));
    assertArrayEquals(new Object[] {0, 0}, (Object[]) back.get("tuple"));
    assertEquals(2500, ((List<?>) back.get("list")).size());
    assertEquals(2499, ((Number) ((List<?>) back.get("list")).get(2499)).intValue());
  }

  @Test
  void everySharedSnapshotPassesTheScan() throws Exception {
    var dir = SharedData.require("torch-snapshots");
    try (var files = Files.list(dir)) {
      for (var f : files.filter(x -> x.toString().endsWith(".pickle")).toList()) {
        assertTrue(PickleScanner.scan(Files.readAllBytes(f)) > 1000, f.toString());
      }
    }
  }

  @Test
  void opcodeNamesAreKnown() {
    assertEquals("BINUNICODE", PickleScanner.opcodeName('X'));
    assertEquals(null, PickleScanner.opcodeName(0xff));
    assertTrue(Arrays.asList("MARK", "STOP").contains(PickleScanner.opcodeName('(')));
  }

  // Found probing the readers beside ReaderFuzzTest: the unpickler parses a text integer in quadratic time (a million digits:
  // 40 s), and a message quoting a LONG4 of half a megabyte took seconds to print.
  @Test
  void integersLongerThanASnapshotHoldsAreRefused() {
    byte[] longText = concat("L".getBytes(), "9".repeat(101).getBytes(), bytes('L', '\n', '.'));
    assertTrue(assertThrows(PickleScanner.Refused.class, () -> PickleScanner.scan(longText)).getMessage()
        .startsWith("refused: LONG at byte 0 holds an integer of 102 characters"));
    byte[] intText = concat("I".getBytes(), "9".repeat(101).getBytes(), bytes('\n', '.'));
    assertTrue(assertThrows(PickleScanner.Refused.class, () -> PickleScanner.scan(intText)).getMessage().startsWith("refused: INT at byte 0"));
    byte[] long4 = concat(bytes(0x80, 2, 0x8b, 0, 1, 0, 0), new byte[256], bytes('.'));
    assertTrue(assertThrows(PickleScanner.Refused.class, () -> PickleScanner.scan(long4)).getMessage()
        .startsWith("refused: LONG4 at byte 2 holds an integer of 256 bytes"));
    assertEquals(2, assertDoesNotThrow(() -> PickleScanner.scan(concat("I".getBytes(), "9".repeat(100).getBytes(), bytes('\n', '.')))));
  }
}
