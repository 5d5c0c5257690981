// Threads: a JVM with many threads in the states a Java service has, for
// bench/services.sh.  Compiled with javac at run time; nothing
// here is part of tinspect.
//
//   java -cp DIR Threads [N]     N worker threads (default 500)
//
// Workers cycle through: Thread.sleep, Object.wait on a shared monitor,
// LockSupport.park, waiting for a held ReentrantLock, and blocking on a
// contended synchronized block; two more threads deadlock on two Java
// monitors (synchronized ABBA), which only a JVM-aware tool (jcmd
// Thread.print) can see.  Prints "ready PID" once every thread is parked.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

public class Threads {
    static final Object waitRoom = new Object();
    static final Object contended = new Object();
    static final Object left = new Object(), right = new Object();
    static final ReentrantLock held = new ReentrantLock();

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 500;
        CountDownLatch holding = new CountDownLatch(2);
        // the holders: one keeps the ReentrantLock, one sits in the
        // synchronized block the others contend for
        Thread h1 = new Thread(() -> { held.lock(); holding.countDown(); sleepForever(); },
                               "lock-holder");
        Thread h2 = new Thread(() -> { synchronized (contended) { holding.countDown(); sleepForever(); } },
                               "monitor-holder");
        h1.setDaemon(true); h2.setDaemon(true);
        h1.start(); h2.start();
        holding.await();
        CountDownLatch started = new CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            final int k = i;
            Thread t = new Thread(() -> {
                started.countDown();
                try {
                    switch (k % 5) {
                    case 0: Thread.sleep(1_000_000_000L); break;
                    case 1: synchronized (waitRoom) { waitRoom.wait(); } break;
                    case 2: LockSupport.park(); break;
                    case 3: held.lock(); break;
                    default: synchronized (contended) { } break;
                    }
                } catch (InterruptedException e) { }
            }, "worker-" + i);
            t.setDaemon(true);
            t.start();
        }
        started.await();
        // a Java-level deadlock: two monitors taken in opposite orders
        CountDownLatch both = new CountDownLatch(2);
        Thread a = new Thread(() -> { synchronized (left) { both.countDown(); await(both); synchronized (right) { } } },
                              "java-abba-1");
        Thread b = new Thread(() -> { synchronized (right) { both.countDown(); await(both); synchronized (left) { } } },
                              "java-abba-2");
        a.setDaemon(true); b.setDaemon(true);
        a.start(); b.start();
        Thread.sleep(2000);     // let every thread reach its wait
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        sleepForever();
    }

    static void await(CountDownLatch l) {
        try { l.await(); } catch (InterruptedException e) { }
    }

    static void sleepForever() {
        for (;;) {
            try { Thread.sleep(1_000_000_000L); } catch (InterruptedException e) { }
        }
    }
}
