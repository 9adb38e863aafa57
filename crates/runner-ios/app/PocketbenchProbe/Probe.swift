// The probe (libpocketbench_probe_ffi.a) as Swift sees it, and what a launch
// with `--spec PATH` does. The strings below are the runner's contract
// (crates/runner-ios/src/contract.rs); a test on the Rust side holds this
// file to them.

import Foundation

/// The probe's C ABI (crates/probe-ffi/include/pocketbench_probe.h).
enum Probe {
    /// "pocketbench-probe VERSION (spec and result schema N, TARGET)".
    static var version: String {
        String(cString: pocketbench_probe_version())
    }

    /// Hands the probe `ProcessInfo.thermalState` (0 nominal ... 3
    /// critical): it reads it at the start and end of every repetition and
    /// records both in the repetition's `app_thermal`.
    static func installThermalState() {
        pocketbench_probe_set_thermal_state_callback {
            Int32(ProcessInfo.processInfo.thermalState.rawValue)
        }
    }

    /// Paths in a spec are relative to the app's data container, where the
    /// runner copied the spec and where the probe builds the model file.
    static func enterDataContainer() {
        FileManager.default.changeCurrentDirectoryPath(NSHomeDirectory())
    }

    /// Measures what the spec's JSON asks: blocks for the whole measurement
    /// (call it off the main thread). The result's JSON, or an error
    /// result's (`{"schema": N, "error": {"field": ..., "message": ...}}`).
    static func run(specJSON: String) -> String {
        installThermalState()
        guard let result = pocketbench_probe_run(specJSON) else {
            return #"{"error": {"field": "run", "message": "the probe returned no result"}}"#
        }
        defer { pocketbench_probe_free(result) }
        return String(cString: result)
    }

    /// Asks a running measurement to stop before its next token.
    static func cancel() {
        pocketbench_probe_cancel()
    }

    /// An error result's "field: message", or nil for a measurement.
    static func failure(in resultJSON: String) -> String? {
        struct Outcome: Decodable {
            struct Failure: Decodable {
                let field: String
                let message: String
            }
            let error: Failure?
        }
        guard let data = resultJSON.data(using: .utf8) else { return "run: the result is not UTF-8" }
        do {
            let outcome = try JSONDecoder().decode(Outcome.self, from: data)
            return outcome.error.map { "\($0.field): \($0.message)" }
        } catch {
            return "run: the result is not JSON: \(error)"
        }
    }
}

/// What the app does when the runner launches it with `--spec PATH`:
/// measure, write the result, print the marker line, exit.
enum Launch {
    /// Where the result goes, relative to the data container.
    static let resultPath = "Documents/pocketbench/result.json"
    /// The line printed when the result is written.
    static let doneMarker = "[pocketbench] done"
    /// The prefix of the line printed when the measurement failed.
    static let errorMarker = "[pocketbench] error: "

    /// The spec's path (relative to the data container) in the launch
    /// arguments, if the runner gave one.
    static func specPath(in arguments: [String]) -> String? {
        guard let flag = arguments.firstIndex(of: "--spec"), flag + 1 < arguments.count else { return nil }
        return arguments[flag + 1]
    }

    /// Measure the spec at `path`, write the result, print one marker line
    /// on stdout (which `devicectl device process launch --console`
    /// relays) and exit.
    static func measure(specAt path: String) -> Never {
        Probe.enterDataContainer()
        let line: String
        do {
            // A stale result must never be copied back as this run's.
            try? FileManager.default.removeItem(atPath: resultPath)
            let spec = try String(contentsOfFile: path, encoding: .utf8)
            let result = Probe.run(specJSON: spec)
            if let failure = Probe.failure(in: result) {
                line = errorMarker + failure
            } else {
                let folder = (resultPath as NSString).deletingLastPathComponent
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                try result.write(toFile: resultPath, atomically: true, encoding: .utf8)
                line = doneMarker
            }
        } catch {
            line = errorMarker + "app: \(error.localizedDescription)"
        }
        // One line: the runner reads the console line by line.
        print(line.replacingOccurrences(of: "\n", with: " "))
        fflush(stdout)
        exit(0)
    }
}
