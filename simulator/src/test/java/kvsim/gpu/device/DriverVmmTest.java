package kvsim.gpu.device;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The structures {@link DriverVmm} hands the CUDA driver, byte for byte, and its foreign-call plumbing where Java has it. */
class DriverVmmTest {
  private static ByteBuffer dirty(int bytes) {
    ByteBuffer b = ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
    byte[] fill = new byte[bytes];
    Arrays.fill(fill, (byte) 0x5A);
    b.put(0, fill);
    return b;
  }

  @Test
  void allocationPropIsPinnedOnTheDeviceWithEveryFlagAndReservedByteZero() {
    ByteBuffer b = dirty(DriverVmm.ALLOCATION_PROP_BYTES);
    DriverVmm.writeAllocationProp(b, 3);
    byte[] expected = new byte[32];
    expected[0] = 1; // type = CU_MEM_ALLOCATION_TYPE_PINNED
    expected[8] = 1; // location.type = CU_MEM_LOCATION_TYPE_DEVICE
    expected[12] = 3; // location.id = the ordinal
    assertArrayEquals(expected, b.array());
  }

  @Test
  void accessDescIsReadWriteForTheDevice() {
    ByteBuffer b = dirty(DriverVmm.ACCESS_DESC_BYTES);
    DriverVmm.writeAccessDesc(b, 2);
    byte[] expected = new byte[12];
    expected[0] = 1; // location.type = CU_MEM_LOCATION_TYPE_DEVICE
    expected[4] = 2; // location.id
    expected[8] = 3; // flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    assertArrayEquals(expected, b.array());
  }

  @Test
  void beforeJava22BindingSaysWhy() {
    assumeTrue(Runtime.version().feature() < 22, "this Java has the foreign function API");
    DriverVmm.Binding binding = DriverVmm.open();
    assertTrue(binding.calls().isEmpty());
    assertTrue(binding.reason().startsWith("page mapping needs Java 22 or newer (this is Java "), binding.reason());
  }

  @Test
  void foreignPlumbingCallsACFunctionWithASegment() throws Throwable {
    assumeTrue(Runtime.version().feature() >= 22, "the foreign function API is final from Java 22; this is Java " + Runtime.version().feature());
    Foreign f = new Foreign();
    // strlen(const char *) through the same reflective path and Object-typed invokeExact as the driver calls.
    MethodHandle strlen = f.downcall(f.defaultLookup(), "strlen", f.jLong, f.address)
        .asType(MethodType.methodType(long.class, Object.class));
    Object segment = f.allocate(16);
    ByteBuffer view = f.byteBuffer(segment);
    view.put(0, "kvsim!".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    assertEquals(6L, (long) strlen.invokeExact(segment));
    assertEquals(ByteOrder.nativeOrder(), view.order());
  }

  @Test
  void handleCarriesTheDriversValue() {
    assertEquals(0x7f00_1234_5678L, CudaDevice.Handle.of(0x7f00_1234_5678L).value());
  }
}
