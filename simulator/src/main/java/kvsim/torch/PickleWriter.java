package kvsim.torch;

import java.io.IOException;
import java.io.OutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * Writes plain Python data as a protocol-2 pickle that any unpickler can read, including the small
 * JavaScript unpickler of PyTorch's {@code memory_viz} page: only dicts, lists, tuples, str, int,
 * float, bool and None, with plain opcodes and no memo.
 *
 * <ul>
 *   <li>{@code PROTO 2} first, {@code STOP} last.
 *   <li>dict: {@code EMPTY_DICT}, then batches of up to 1000 pairs as {@code MARK} … {@code
 *       SETITEMS}; list: {@code EMPTY_LIST}, then {@code MARK} … {@code APPENDS} batches; tuple
 *       ({@code Object[]}): {@code MARK} … {@code TUPLE}.
 *   <li>int: {@code BININT} in the signed 32-bit range, {@code LONG1} (little-endian two's
 *       complement) beyond; float: {@code BINFLOAT}; str: {@code BINUNICODE} (UTF-8); bool: {@code
 *       NEWTRUE}/{@code NEWFALSE}; None: {@code NONE}.
 * </ul>
 */
public final class PickleWriter {
  private static final int BATCH = 1000;

  private final OutputStream out;
  private final byte[] buf = new byte[9];

  private PickleWriter(OutputStream out) {
    this.out = out;
  }

  /** Writes {@code value} as a complete pickle to {@code out} (not closed). */
  public static void write(Object value, OutputStream out) throws IOException {
    PickleWriter w = new PickleWriter(out);
    out.write(0x80);
    out.write(2);
    w.value(value);
    out.write('.');
  }

  private void value(Object v) throws IOException {
    if (v == null) {
      out.write('N');
    } else if (v instanceof Boolean b) {
      out.write(b ? 0x88 : 0x89);
    } else if (v instanceof Integer || v instanceof Long || v instanceof Short || v instanceof Byte) {
      integer(((Number) v).longValue());
    } else if (v instanceof BigInteger b) {
      long1(b);
    } else if (v instanceof Double || v instanceof Float) {
      out.write('G');
      long bits = Double.doubleToLongBits(((Number) v).doubleValue());
      for (int i = 0; i < 8; i++) {
        buf[i] = (byte) (bits >>> (56 - 8 * i));
      }
      out.write(buf, 0, 8);
    } else if (v instanceof CharSequence s) {
      byte[] utf8 = s.toString().getBytes(StandardCharsets.UTF_8);
      out.write('X');
      int4(utf8.length);
      out.write(utf8);
    } else if (v instanceof Map<?, ?> m) {
      out.write('}');
      int n = 0;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (n % BATCH == 0) {
          if (n > 0) {
            out.write('u');
          }
          out.write('(');
        }
        value(e.getKey());
        value(e.getValue());
        n++;
      }
      if (n > 0) {
        out.write('u');
      }
    } else if (v instanceof List<?> l) {
      out.write(']');
      int n = 0;
      for (Object o : l) {
        if (n % BATCH == 0) {
          if (n > 0) {
            out.write('e');
          }
          out.write('(');
        }
        value(o);
        n++;
      }
      if (n > 0) {
        out.write('e');
      }
    } else if (v instanceof Object[] tuple) {
      out.write('(');
      for (Object o : tuple) {
        value(o);
      }
      out.write('t');
    } else {
      throw new IllegalArgumentException("cannot pickle a " + v.getClass().getName() + " as plain data");
    }
  }

  private void integer(long x) throws IOException {
    if (x >= Integer.MIN_VALUE && x <= Integer.MAX_VALUE) {
      out.write('J');
      int4((int) x);
    } else {
      long1(BigInteger.valueOf(x));
    }
  }

  private void long1(BigInteger x) throws IOException {
    byte[] be = x.toByteArray(); // minimal big-endian two's complement
    if (be.length > 255) {
      throw new IllegalArgumentException("integer too large to pickle with LONG1");
    }
    out.write(0x8a);
    out.write(be.length);
    for (int i = be.length - 1; i >= 0; i--) {
      out.write(be[i]);
    }
  }

  private void int4(int x) throws IOException {
    buf[0] = (byte) x;
    buf[1] = (byte) (x >>> 8);
    buf[2] = (byte) (x >>> 16);
    buf[3] = (byte) (x >>> 24);
    out.write(buf, 0, 4);
  }
}
