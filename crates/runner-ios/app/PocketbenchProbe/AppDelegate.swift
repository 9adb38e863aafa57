// The app's life cycle: a window that says what it is, and the measurement
// once the app is active. A launched app starts inactive, and GPU work is
// refused until it is active, so the probe starts from
// applicationDidBecomeActive, on a background queue (it blocks for the
// whole measurement).

import UIKit

@main
final class AppDelegate: UIResponder, UIApplicationDelegate {
    var window: UIWindow?
    private var started = false

    func application(
        _ application: UIApplication,
        didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]? = nil
    ) -> Bool {
        let label = UILabel()
        label.numberOfLines = 0
        label.textAlignment = .center
        label.text = "\(Probe.version)\n\nLaunched by pocketbench with --spec PATH, it measures and exits."
        let root = UIViewController()
        root.view = label
        label.backgroundColor = .systemBackground
        window = UIWindow(frame: UIScreen.main.bounds)
        window?.rootViewController = root
        window?.makeKeyAndVisible()
        return true
    }

    func applicationDidBecomeActive(_ application: UIApplication) {
        // Without --spec (opened by hand, or hosting the XCTest bundle) the
        // app only shows its version.
        guard !started, let spec = Launch.specPath(in: CommandLine.arguments) else { return }
        started = true
        // A sweep of many launches must not be cut short by Auto-Lock.
        application.isIdleTimerDisabled = true
        DispatchQueue.global(qos: .userInitiated).async {
            Launch.measure(specAt: spec)
        }
    }

    func applicationWillResignActive(_ application: UIApplication) {
        // Backgrounded mid-run: stop rather than measure a suspended app;
        // the probe then returns its cancel error and the app says so.
        if started {
            Probe.cancel()
        }
    }
}
