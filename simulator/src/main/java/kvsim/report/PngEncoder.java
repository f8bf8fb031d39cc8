package kvsim.report;

import java.awt.image.BufferedImage;
import java.awt.image.DataBufferInt;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;
import java.util.zip.Deflater;

/**
 * Encodes a chart's image as a PNG file (the PNG specification, ISO/IEC 15948: signature, {@code
 * IHDR}, one {@code IDAT}, {@code IEND}) several times faster than the JDK's image writer, which
 * tries five filters on every row and compresses harder than charts need.
 *
 * <p>Note [Chart PNGs]: a chart is large areas of one colour and thin lines, so one fixed filter
 * ("Up": each byte minus the one above it, which turns rows that repeat the row above into zeros)
 * and the fastest deflate level compress it well; the files are somewhat larger than the JDK's,
 * the pixels the same. An image whose pixels are all opaque (every chart: its background is white)
 * is written as 8-bit RGB, any other as 8-bit RGBA, non-premultiplied, as the JDK writes it. The
 * output depends on the pixels alone, so the same chart gives the same bytes.
 */
final class PngEncoder {
  private static final byte[] SIGNATURE = {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  private static final int COLOUR_RGB = 2;
  private static final int COLOUR_RGBA = 6;
  private static final int FILTER_UP = 2;

  private PngEncoder() {}

  /** Writes {@code image} to {@code out} as a PNG file. */
  static void write(BufferedImage image, OutputStream out) throws IOException {
    out.write(encode(image));
  }

  /** Returns {@code image} as the bytes of a PNG file. */
  static byte[] encode(BufferedImage image) {
    int width = image.getWidth();
    int height = image.getHeight();
    int[] argb = pixels(image);
    boolean opaque = true;
    for (int p : argb) {
      if (p >>> 24 != 0xff) {
        opaque = false;
        break;
      }
    }
    int channels = opaque ? 3 : 4;
    int stride = width * channels;
    byte[] previous = new byte[stride];
    byte[] row = new byte[stride];
    byte[] filtered = new byte[stride + 1];
    filtered[0] = FILTER_UP;
    Deflater deflater = new Deflater(Deflater.BEST_SPEED);
    ByteArrayOutputStream idat = new ByteArrayOutputStream(width * height / 4 + 1024);
    byte[] buffer = new byte[1 << 16];
    try {
      for (int y = 0; y < height; y++) {
        int base = y * width;
        for (int x = 0, i = 0; x < width; x++) {
          int p = argb[base + x];
          row[i++] = (byte) (p >>> 16);
          row[i++] = (byte) (p >>> 8);
          row[i++] = (byte) p;
          if (!opaque) {
            row[i++] = (byte) (p >>> 24);
          }
        }
        for (int i = 0; i < stride; i++) {
          filtered[i + 1] = (byte) (row[i] - previous[i]);
        }
        byte[] t = previous;
        previous = row;
        row = t;
        deflater.setInput(filtered);
        while (!deflater.needsInput()) {
          idat.write(buffer, 0, deflater.deflate(buffer));
        }
      }
      deflater.finish();
      while (!deflater.finished()) {
        idat.write(buffer, 0, deflater.deflate(buffer));
      }
    } finally {
      deflater.end();
    }
    ByteArrayOutputStream png = new ByteArrayOutputStream(idat.size() + 64);
    png.writeBytes(SIGNATURE);
    byte[] header = new byte[13];
    putInt(header, 0, width);
    putInt(header, 4, height);
    header[8] = 8; // bits per sample
    header[9] = (byte) (opaque ? COLOUR_RGB : COLOUR_RGBA);
    // header[10..12]: deflate compression, adaptive filtering, no interlace: all 0
    chunk(png, "IHDR", header);
    chunk(png, "IDAT", idat.toByteArray());
    chunk(png, "IEND", new byte[0]);
    return png.toByteArray();
  }

  /** Returns the image's pixels as packed ARGB, row by row. */
  private static int[] pixels(BufferedImage image) {
    if (image.getType() == BufferedImage.TYPE_INT_ARGB && image.getRaster().getDataBuffer() instanceof DataBufferInt data
        && data.getNumBanks() == 1 && image.getRaster().getSampleModelTranslateX() == 0 && image.getRaster().getSampleModelTranslateY() == 0
        && data.getData().length == image.getWidth() * image.getHeight()) {
      return data.getData();
    }
    return image.getRGB(0, 0, image.getWidth(), image.getHeight(), null, 0, image.getWidth());
  }

  private static void chunk(ByteArrayOutputStream out, String type, byte[] data) {
    byte[] length = new byte[4];
    putInt(length, 0, data.length);
    out.writeBytes(length);
    byte[] name = type.getBytes(StandardCharsets.US_ASCII);
    out.writeBytes(name);
    out.writeBytes(data);
    CRC32 crc = new CRC32();
    crc.update(name);
    crc.update(data);
    byte[] sum = new byte[4];
    putInt(sum, 0, (int) crc.getValue());
    out.writeBytes(sum);
  }

  private static void putInt(byte[] b, int at, int v) {
    b[at] = (byte) (v >>> 24);
    b[at + 1] = (byte) (v >>> 16);
    b[at + 2] = (byte) (v >>> 8);
    b[at + 3] = (byte) v;
  }
}
