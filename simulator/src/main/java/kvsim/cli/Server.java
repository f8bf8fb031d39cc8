package kvsim.cli;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The resident server ({@code kvsim server start}, README "The resident server"): one JVM that
 * stays up in one working folder and runs the commands the launcher sends it, one at a time, with
 * their output streamed back to the {@link ServerClient} that asked.
 *
 * <p>Note [Resident server]: a short run spends most of its time starting a JVM, loading classes
 * and compiling its hot code: a one-hour serving run takes about 2 s from the launcher, and
 * about 0.9 s when run again in a JVM that ran it before (the same bytes out). Users who run kvsim
 * many times in a row (seed sweeps from a shell loop, a CI gate, a notebook) can keep such a JVM:
 *
 * <ul>
 *   <li>It serves one working folder, so relative paths in arguments mean what they mean to the
 *       caller, one build (the jar's path, size and time, and the java) and one set of settings
 *       (the launcher's JVM options and debug setting), which the launcher passes to both sides
 *       ({@link ServerClient.Identity}). A command from another folder, build or settings is
 *       refused, and the launcher runs it itself; one of another build also stops the server,
 *       which is then stale (the jar was rebuilt). A launcher may leave the build's check to the
 *       server, which then serves it only while its jar is unchanged and no source is newer
 *       ({@link ServedBuild}, Note [Sources checked by the server] in {@code kvsim}), and stops
 *       otherwise. {@code status} and {@code stop} answer any launcher of the folder.
 *   <li>A command runs exactly as {@code main} runs it ({@link KvSim#execute}), with standard output
 *       and error sent to the client as they are written, and its exit status last; files are
 *       written by the server, into the same folder. Commands keep no state between runs but
 *       caches of immutable data, so results are the same bytes as a direct run's
 *       ({@code ServerTest} compares them).
 *   <li>When the client goes away before its command ends (Ctrl-C), the server exits at once, as
 *       a direct run would be interrupted: its shutdown hooks remove the command's temporaries
 *       (Note [Nothing left behind] on {@code kvsim.core.Temporaries}). It also exits after
 *       {@code idleMinutes} without a request, or when asked to stop.
 *   <li>Before it listens it runs the launcher's training commands once ({@link Training}), so the
 *       first command it serves is already partly compiled.
 * </ul>
 *
 * <p>Protocol (one request per connection, over a Unix domain socket whose folder only the user
 * can enter): the client sends {@code kvsim-server 1}, the build, the settings, its working
 * folder, a verb ({@code run}, {@code status}, {@code stop}), the number of arguments and the
 * arguments, each string as its length and UTF-8 bytes; the server answers with frames of a kind
 * byte ({@code 1} stdout, {@code 2} stderr), a length and the bytes, ended by {@code 0} and the
 * exit status, or by {@code 3} and the reason for a refusal.
 */
public final class Server {
  private final Path socket;
  /** The build, settings and folder this server serves (Note [Resident server]). */
  private final ServerClient.Identity identity;
  /** The build read as the launcher names it, or null (Note [Sources checked by the server] in kvsim). */
  private final ServedBuild servedBuild;
  private final long idleNanos;
  private final long startedNanos = System.nanoTime();
  /** Commands run so far. */
  private long served;
  /** When the last request ended (guarded by this). */
  private long lastRequestNanos;
  /** Whether a request is being served (guarded by this). */
  private boolean busy;

  private Server(Path socket, ServerClient.Identity identity, long idleMinutes) {
    this.socket = socket;
    this.identity = identity;
    this.servedBuild = ServedBuild.of(identity.build());
    this.idleNanos = TimeUnit.MINUTES.toNanos(idleMinutes);
  }

  /**
   * {@code java -cp kvsim.jar kvsim.cli.Server SOCKET BUILD SETTINGS IDLE_MINUTES [--no-warm-up]}:
   * serves the current folder until stopped; exits 2 on bad arguments or when another server
   * answers on the socket.
   */
  public static void main(String[] args) throws IOException {
    if (args.length < 4 || args.length > 5 || (args.length == 5 && !args[4].equals("--no-warm-up"))) {
      System.err.println("usage: java -cp kvsim.jar kvsim.cli.Server SOCKET BUILD SETTINGS IDLE_MINUTES [--no-warm-up]");
      System.exit(KvSim.EXIT_BAD_INPUT);
    }
    long idle;
    try {
      idle = Long.parseLong(args[3]);
    } catch (NumberFormatException e) {
      idle = -1;
    }
    if (idle < 1) {
      System.err.println("kvsim server: IDLE_MINUTES must be a whole number of minutes, at least 1: " + args[3]);
      System.exit(KvSim.EXIT_BAD_INPUT);
    }
    String folder = Path.of("").toAbsolutePath().toString();
    Server server = new Server(Path.of(args[0]), new ServerClient.Identity(args[1], args[2], folder), idle);
    if (args.length == 4) {
      server.warmUp();
    }
    System.exit(server.serve());
  }

  /** Runs the training commands once in a temporary folder, so that the commands served start compiled. */
  private void warmUp() throws IOException {
    Path dir = Files.createTempDirectory("kvsim-server-warm-up");
    try {
      Training.run(dir);
    } finally {
      kvsim.core.AtomicFiles.discard(dir);
    }
  }

  private int serve() throws IOException {
    if (Files.exists(socket, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      try (SocketChannel other = SocketChannel.open(StandardProtocolFamily.UNIX)) {
        other.connect(UnixDomainSocketAddress.of(socket));
        System.err.println("kvsim server: another server answers on " + socket);
        return KvSim.EXIT_BAD_INPUT;
      } catch (IOException e) {
        Files.delete(socket); // left by a server that no longer runs
      }
    }
    // Bound under a name of its own, then moved to the socket's name once it listens: a client that
    // finds the socket and is refused may then take it for a killed server's and remove it.
    ServerSocketChannel listener = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    Path bound = socket.resolveSibling(socket.getFileName() + "." + ProcessHandle.current().pid() + ".tmp");
    try {
      Files.deleteIfExists(bound);
      listener.bind(UnixDomainSocketAddress.of(bound));
      Files.move(bound, socket, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      Files.deleteIfExists(bound);
      System.err.println("kvsim server: cannot listen on " + socket + ": " + e.getMessage());
      return KvSim.EXIT_BAD_INPUT;
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> socket.toFile().delete(), "kvsim-server-socket"));
    System.err.println("kvsim server: serving " + identity.folder() + " on " + socket + " (process " + ProcessHandle.current().pid() + ")");
    Thread idleWatch = new Thread(() -> watchIdle(listener), "kvsim-server-idle");
    idleWatch.setDaemon(true);
    lastRequestNanos = System.nanoTime();
    idleWatch.start();
    while (true) {
      SocketChannel channel;
      try {
        channel = listener.accept();
      } catch (IOException e) {
        return KvSim.EXIT_OK; // closed by the idle watch
      }
      synchronized (this) {
        busy = true;
      }
      boolean stop;
      try (channel) {
        stop = handle(channel);
      } catch (IOException e) {
        stop = false; // the client went away before its request was read: nothing ran
      }
      synchronized (this) {
        busy = false;
        lastRequestNanos = System.nanoTime();
      }
      if (stop) {
        listener.close();
        return KvSim.EXIT_OK;
      }
    }
  }

  private void watchIdle(ServerSocketChannel listener) {
    while (true) {
      try {
        Thread.sleep(1000);
      } catch (InterruptedException e) {
        return;
      }
      synchronized (this) {
        if (!busy && System.nanoTime() - lastRequestNanos > idleNanos) {
          System.err.println("kvsim server: idle for " + TimeUnit.NANOSECONDS.toMinutes(idleNanos) + " minutes: stopping");
          try {
            listener.close();
          } catch (IOException e) {
            System.exit(KvSim.EXIT_OK);
          }
          return;
        }
      }
    }
  }

  /** Serves one connection; returns true when the server is to stop. */
  private boolean handle(SocketChannel channel) throws IOException {
    // The channel's own reads and writes, not Channels' streams: a command's output is written
    // while the client watch reads, and up to JDK 20 those streams lock one lock for both.
    DataInputStream in = new DataInputStream(new ChannelIn(channel));
    DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(new ChannelOut(channel), 1 << 13));
    if (!ServerClient.MAGIC.equals(ServerClient.readString(in))) {
      return false; // not a kvsim client: say nothing
    }
    ServerClient.Identity client = new ServerClient.Identity(ServerClient.readString(in), ServerClient.readString(in), ServerClient.readString(in));
    String verb = ServerClient.readString(in);
    int n = in.readInt();
    if (n < 0 || n > 100_000) {
      return false;
    }
    String[] args = new String[n];
    for (int i = 0; i < n; i++) {
      args[i] = ServerClient.readString(in);
    }
    if (!identity.folder().equals(client.folder())) {
      refuse(out, "this kvsim server serves " + identity.folder() + ", not " + client.folder());
      return false;
    }
    // status and stop answer whatever the build and settings; a command runs only in its own
    if (verb.equals("run") && !identity.build().equals(client.build())) {
      if (servedBuild == null || !servedBuild.leavesCheckToServer(client.build())) {
        refuse(out, "this kvsim server runs another build (" + identity.build() + "); it stops now");
        return true;
      }
      String stale = servedBuild.staleness(); // Note [Sources checked by the server] in kvsim
      if (stale != null) {
        refuse(out, "this kvsim server's build is stale: " + stale + "; it stops now");
        return true;
      }
    }
    if (verb.equals("run") && !identity.settings().equals(client.settings())) {
      refuse(out, "this kvsim server runs with other settings (" + identity.settings() + ")");
      return false;
    }
    switch (verb) {
      case "stop" -> {
        finish(out, "kvsim server: stopped (process " + ProcessHandle.current().pid() + ", commands served: " + served + ")\n", KvSim.EXIT_OK);
        return true;
      }
      case "status" -> {
        long minutes = TimeUnit.NANOSECONDS.toMinutes(System.nanoTime() - startedNanos);
        String other = identity.build().equals(client.build()) && identity.settings().equals(client.settings()) ? ""
            : "; it runs another build or settings than this launcher's, so commands run outside it until it is stopped and started again";
        finish(out, "kvsim server: serving " + identity.folder() + " (process " + ProcessHandle.current().pid() + ", up " + minutes + " min, commands served: "
            + served + ", stops after " + TimeUnit.NANOSECONDS.toMinutes(idleNanos) + " idle minutes" + other + ")\n", KvSim.EXIT_OK);
        return false;
      }
      case "run" -> {
        run(in, out, args);
        return false;
      }
      default -> {
        refuse(out, "unknown request " + verb);
        return false;
      }
    }
  }

  /** Runs one command with its output framed to the client; exits the JVM if the client leaves first. */
  private void run(DataInputStream in, DataOutputStream out, String[] args) throws IOException {
    java.util.concurrent.atomic.AtomicBoolean ended = new java.util.concurrent.atomic.AtomicBoolean();
    Thread watch = new Thread(() -> {
      try {
        while (in.read() >= 0) {
          // the client sends nothing more after its request; end of stream means it went away
        }
      } catch (IOException e) {
        // closed under us: the same
      }
      if (!ended.get()) {
        Runtime.getRuntime().halt(exitAfterHooks());
      }
    }, "kvsim-server-client-watch");
    watch.setDaemon(true);
    watch.start();
    PrintStream stdout = System.out;
    PrintStream stderr = System.err;
    PrintStream framedOut = new PrintStream(new Framed(out, ServerClient.STDOUT), true, StandardCharsets.UTF_8);
    PrintStream framedErr = new PrintStream(new Framed(out, ServerClient.STDERR), true, StandardCharsets.UTF_8);
    int status;
    try {
      System.setOut(framedOut);
      System.setErr(framedErr);
      kvsim.core.AtomicFiles.startCommand();
      status = KvSim.execute(args);
    } finally {
      framedOut.flush();
      framedErr.flush();
      System.setOut(stdout);
      System.setErr(stderr);
    }
    served++;
    ended.set(true); // before the status goes out: the client closes the connection once it has it
    synchronized (out) {
      out.writeByte(ServerClient.EXIT);
      out.writeInt(status);
      out.flush();
    }
  }

  /**
   * The client left while its command ran: runs the shutdown hooks (the command's temporaries go,
   * and the socket) in a thread of their own, then returns the status of an interrupted run.
   */
  private static int exitAfterHooks() {
    Thread exit = new Thread(() -> System.exit(130), "kvsim-server-exit");
    exit.start();
    try {
      exit.join(TimeUnit.SECONDS.toMillis(10));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return 130;
  }

  private static void finish(DataOutputStream out, String message, int status) throws IOException {
    byte[] b = message.getBytes(StandardCharsets.UTF_8);
    out.writeByte(ServerClient.STDOUT);
    out.writeInt(b.length);
    out.write(b);
    out.writeByte(ServerClient.EXIT);
    out.writeInt(status);
    out.flush();
  }

  private static void refuse(DataOutputStream out, String reason) throws IOException {
    byte[] b = reason.getBytes(StandardCharsets.UTF_8);
    out.writeByte(ServerClient.REFUSED);
    out.writeInt(b.length);
    out.write(b);
    out.flush();
  }

  /** Reads from a blocking channel directly. */
  private static final class ChannelIn extends java.io.InputStream {
    private final SocketChannel channel;

    ChannelIn(SocketChannel channel) {
      this.channel = channel;
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      return len == 0 ? 0 : channel.read(java.nio.ByteBuffer.wrap(b, off, len));
    }
  }

  /** Writes to a blocking channel directly, each write whole. */
  private static final class ChannelOut extends OutputStream {
    private final SocketChannel channel;

    ChannelOut(SocketChannel channel) {
      this.channel = channel;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      java.nio.ByteBuffer buffer = java.nio.ByteBuffer.wrap(b, off, len);
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
    }
  }

  /** One standard stream of the command, sent to the client as frames of its kind. */
  private static final class Framed extends OutputStream {
    private final DataOutputStream out;
    private final byte kind;
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();

    Framed(DataOutputStream out, byte kind) {
      this.out = out;
      this.kind = kind;
    }

    @Override
    public synchronized void write(int b) throws IOException {
      pending.write(b);
      if (b == '\n') {
        flush();
      }
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
      pending.write(b, off, len);
      if (pending.size() >= 8192) {
        flush();
      }
    }

    @Override
    public synchronized void flush() throws IOException {
      if (pending.size() == 0) {
        return;
      }
      synchronized (out) {
        out.writeByte(kind);
        out.writeInt(pending.size());
        pending.writeTo(out);
        out.flush();
      }
      pending.reset();
    }
  }
}
