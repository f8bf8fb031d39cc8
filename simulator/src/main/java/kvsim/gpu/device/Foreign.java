package kvsim.gpu.device;

import java.lang.invoke.MethodHandle;
import java.lang.reflect.Array;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Optional;

/**
 * Java's foreign function API ({@code java.lang.foreign}) reached by reflection, for the few C
 * calls kvsim makes itself: the driver's {@code cuMemCreate} and {@code cuMemSetAccess} ({@link
 * DriverVmm}) and cuBLAS's GEMM ({@link ForeignCublas}). The product compiles for Java 17; see
 * Note [Foreign calls by reflection] in {@link DriverVmm}.
 */
final class Foreign {
  private final Class<?> segmentClass = Class.forName("java.lang.foreign.MemorySegment");
  private final Class<?> layoutClass = Class.forName("java.lang.foreign.MemoryLayout");
  private final Class<?> arenaClass = Class.forName("java.lang.foreign.Arena");
  private final Class<?> lookupClass = Class.forName("java.lang.foreign.SymbolLookup");
  private final Class<?> linkerClass = Class.forName("java.lang.foreign.Linker");
  private final Class<?> optionClass = Class.forName("java.lang.foreign.Linker$Option");
  private final Class<?> descriptorClass = Class.forName("java.lang.foreign.FunctionDescriptor");
  private final Object arena = arenaClass.getMethod("global").invoke(null);
  private final Object linker = linkerClass.getMethod("nativeLinker").invoke(null);
  final Object jInt = valueLayout("JAVA_INT");
  final Object jLong = valueLayout("JAVA_LONG");
  final Object address = valueLayout("ADDRESS");

  Foreign() throws ReflectiveOperationException {}

  /** What went wrong in a call made by reflection: the call's own exception rather than its wrapper. */
  static Throwable causeOf(Throwable t) {
    return t instanceof java.lang.reflect.InvocationTargetException ite && ite.getCause() != null ? ite.getCause() : t;
  }

  private Object valueLayout(String name) throws ReflectiveOperationException {
    return Class.forName("java.lang.foreign.ValueLayout").getField(name).get(null);
  }

  /** {@code SymbolLookup.libraryLookup(name, Arena.global())}. */
  Object libraryLookup(String name) throws ReflectiveOperationException {
    return lookupClass.getMethod("libraryLookup", String.class, arenaClass).invoke(null, name, arena);
  }

  /** The lookup of the C library the linker itself uses ({@code Linker.defaultLookup()}). */
  Object defaultLookup() throws ReflectiveOperationException {
    return linkerClass.getMethod("defaultLookup").invoke(linker);
  }

  /** A downcall handle for {@code symbol} in {@code lookup} returning {@code result} and taking {@code arguments}. */
  MethodHandle downcall(Object lookup, String symbol, Object result, Object... arguments) throws ReflectiveOperationException {
    Optional<?> found = (Optional<?>) lookupClass.getMethod("find", String.class).invoke(lookup, symbol);
    if (found.isEmpty()) {
      throw new IllegalStateException("no symbol " + symbol);
    }
    Object layouts = Array.newInstance(layoutClass, arguments.length);
    for (int i = 0; i < arguments.length; i++) {
      Array.set(layouts, i, arguments[i]);
    }
    Object descriptor = descriptorClass.getMethod("of", layoutClass, layouts.getClass()).invoke(null, result, layouts);
    Object options = Array.newInstance(optionClass, 0);
    return (MethodHandle) linkerClass.getMethod("downcallHandle", segmentClass, descriptorClass, options.getClass())
        .invoke(linker, found.get(), descriptor, options);
  }

  /** A zeroed native segment of {@code bytes}, 8-byte aligned, alive for the process. */
  Object allocate(long bytes) throws ReflectiveOperationException {
    return arenaClass.getMethod("allocate", long.class, long.class).invoke(arena, bytes, 8L);
  }

  /** The segment's native address ({@code MemorySegment.address()}). */
  long addressOf(Object segment) throws ReflectiveOperationException {
    return (long) segmentClass.getMethod("address").invoke(segment);
  }

  /** The segment's bytes as a native-order buffer. */
  ByteBuffer byteBuffer(Object segment) throws ReflectiveOperationException {
    return ((ByteBuffer) segmentClass.getMethod("asByteBuffer").invoke(segment)).order(ByteOrder.nativeOrder());
  }
}
