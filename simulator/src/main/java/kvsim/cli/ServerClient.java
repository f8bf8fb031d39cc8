package kvsim.cli;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The launcher's side of the resident server (Note [Resident server] on {@link Server}): sends one
 * request and copies the answer to this process's standard streams, then exits with the command's
 * status. It uses {@code java.base} alone, so that its JVM starts in about a tenth of a second. The
 * launcher runs it where there is no {@code perl}; elsewhere it runs its own Perl program, which
 * speaks this protocol byte for byte and starts in about 0.02 s (Note [A client without a JVM] in
 * {@code kvsim}; {@code ServerTest} runs both against one server).
 *
 * <p>{@code java -cp CLASSES kvsim.cli.ServerClient SOCKET BUILD SETTINGS VERB [ARGS...]}, VERB one of
 * {@code run}, {@code status}, {@code stop}. It exits {@link #NO_SERVER} when no server answers or
 * the server refuses the request; the launcher then runs the command itself.
 */
public final class ServerClient {
  /** The first string of every request. */
  static final String MAGIC = "kvsim-server 1";
  /** Answer frame kinds. */
  static final byte EXIT = 0;
  static final byte STDOUT = 1;
  static final byte STDERR = 2;
  static final byte REFUSED = 3;
  /** Exit status when no server ran the request (none answered, or it refused): the launcher runs the command itself. */
  public static final int NO_SERVER = 99;

  private ServerClient() {}

  public static void main(String[] args) throws IOException {
    if (args.length < 4) {
      System.err.println("usage: java -cp CLASSES kvsim.cli.ServerClient SOCKET BUILD SETTINGS run|status|stop [ARGS...]");
      System.exit(2);
    }
    String[] rest = java.util.Arrays.copyOfRange(args, 4, args.length);
    OutputStream out = new FileOutputStream(FileDescriptor.out);
    OutputStream err = new FileOutputStream(FileDescriptor.err);
    String folder = Path.of("").toAbsolutePath().toString();
    System.exit(request(Path.of(args[0]), new Identity(args[1], args[2], folder), args[3], rest, out, err));
  }

  /**
   * What a request must match in the server to be served (Note [Resident server] on {@link
   * Server}): the build (jar and java; a server of another build stops), the settings (the JVM
   * options and debug setting; another's are refused) and the working folder (another is refused).
   */
  record Identity(String build, String settings, String folder) {}

  /**
   * Sends {@code verb} with {@code args} as {@code identity} to the server at {@code socket},
   * copies its output to {@code out} and {@code err}, and returns the command's exit status;
   * {@link #NO_SERVER} when none answered or it refused (the reason then goes to {@code err}
   * unless the verb is {@code run}, whose caller runs the command itself instead).
   */
  static int request(Path socket, Identity identity, String verb, String[] args, OutputStream out, OutputStream err) throws IOException {
    SocketChannel channel;
    try {
      channel = SocketChannel.open(StandardProtocolFamily.UNIX);
      channel.connect(UnixDomainSocketAddress.of(socket));
    } catch (java.net.ConnectException e) {
      // refused: nothing listens (a server gives its socket this name only once it listens), so the
      // file is a killed server's
      java.nio.file.Files.deleteIfExists(socket);
      return NO_SERVER;
    } catch (IOException e) {
      return NO_SERVER; // none listens there (it stopped, or never started)
    }
    try (channel) {
      DataOutputStream request = new DataOutputStream(new java.io.BufferedOutputStream(Channels.newOutputStream(channel)));
      writeString(request, MAGIC);
      writeString(request, identity.build());
      writeString(request, identity.settings());
      writeString(request, identity.folder());
      writeString(request, verb);
      request.writeInt(args.length);
      for (String a : args) {
        writeString(request, a);
      }
      request.flush();
      DataInputStream answer = new DataInputStream(new java.io.BufferedInputStream(Channels.newInputStream(channel)));
      // A stream whose reader left (| head) is dropped from then on and the command goes on to its
      // end, as a direct run's JVM goes on when its standard output is closed.
      boolean outGone = false;
      boolean errGone = false;
      while (true) {
        int kind;
        try {
          kind = answer.readByte();
        } catch (EOFException e) {
          err.write(("kvsim: the kvsim server stopped before the command ended; its log is beside its socket, " + socket + ".log\n")
              .getBytes(StandardCharsets.UTF_8));
          err.flush();
          return 1;
        }
        switch (kind) {
          case EXIT -> {
            return answer.readInt();
          }
          case STDOUT, STDERR -> {
            byte[] b = answer.readNBytes(answer.readInt()); // read whatever is written: the frames go on
            if (kind == STDOUT) {
              outGone = outGone || !copied(b, out);
            } else {
              errGone = errGone || !copied(b, err);
            }
          }
          case REFUSED -> {
            String reason = new String(answer.readNBytes(answer.readInt()), StandardCharsets.UTF_8);
            if (!verb.equals("run")) {
              err.write(("kvsim server: " + reason + "\n").getBytes(StandardCharsets.UTF_8));
              err.flush();
            }
            return NO_SERVER;
          }
          default -> throw new IOException("the kvsim server sent a frame of unknown kind " + kind);
        }
      }
    }
  }

  /** Writes {@code bytes} to {@code to}; returns false when its reader has gone. */
  private static boolean copied(byte[] bytes, OutputStream to) {
    try {
      to.write(bytes);
      to.flush();
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** Writes a string as its length and UTF-8 bytes. */
  static void writeString(DataOutputStream out, String s) throws IOException {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    out.writeInt(b.length);
    out.write(b);
  }

  /** Reads a string written by {@link #writeString}. */
  static String readString(DataInputStream in) throws IOException {
    int length = in.readInt();
    if (length < 0 || length > (1 << 24)) {
      throw new IOException("bad string length " + length);
    }
    return new String(in.readNBytes(length), StandardCharsets.UTF_8);
  }
}
