// XCTest's view of one spec: `measure(metrics:)` runs the probe on
// spec.json (mnn-pocket-0.3b, q4_0, 1024 prompt + 128 generated tokens, 2
// threads) and reports the probe's own speeds and peak phys_footprint
// increase through a custom XCTMetric, beside XCTest's clock and memory
// metrics. A farm reads them with `xcrun xcresulttool get test-results
// metrics --path X.xcresult`; pocketbench's parser
// (crates/runner-ios/src/xcresult.rs) knows these identifiers. The spec and
// every iteration's whole result JSON are kept as attachments
// (`pocketbench-spec`, `pocketbench-result`), which `xcresulttool export
// attachments` writes out and `pocketbench import-xctest` stores.

import XCTest
@testable import PocketbenchProbe

/// The last measurement of the block, for the metric to report.
final class ProbeRecord {
    static let shared = ProbeRecord()
    private let lock = NSLock()
    private var result: ProbeResult?

    func put(_ result: ProbeResult) {
        lock.lock()
        defer { lock.unlock() }
        self.result = result
    }

    func take() -> ProbeResult? {
        lock.lock()
        defer { lock.unlock() }
        let r = result
        result = nil
        return r
    }
}

/// The part of the probe's result JSON the test reads.
struct ProbeResult: Decodable {
    struct Rep: Decodable {
        let prefillTokS: Double
        let decodeTokS: Double
        let ttftS: Double
        let tokensHash: String?
    }
    let reps: [Rep]
    let peakIncreaseBytes: UInt64?

    static func decode(_ json: String) throws -> ProbeResult {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(ProbeResult.self, from: Data(json.utf8))
    }

    /// The median of the repetitions' values.
    static func median(_ values: [Double]) -> Double {
        let s = values.sorted()
        guard !s.isEmpty else { return .nan }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
}

enum ProbeMetricError: Error {
    case noMeasurement
}

/// Reports what the probe measured in the iteration just run: decode and
/// prefill speed, time to first token and the peak memory increase (the
/// phys_footprint ledger jetsam enforces, read by the probe itself, less
/// its value before the model was loaded).
final class ProbeMetric: NSObject, XCTMetric {
    static let decode = "dev.pocketbench.decode_tok_s"
    static let prefill = "dev.pocketbench.prefill_tok_s"
    static let ttft = "dev.pocketbench.ttft_ms"
    static let footprint = "dev.pocketbench.peak_increase_kb"

    func copy(with zone: NSZone? = nil) -> Any {
        ProbeMetric()
    }

    func willBeginMeasuring() {}

    func didStopMeasuring() {}

    func reportMeasurements(
        from startTime: XCTPerformanceMeasurementTimestamp,
        to endTime: XCTPerformanceMeasurementTimestamp
    ) throws -> [XCTPerformanceMeasurement] {
        guard let r = ProbeRecord.shared.take() else { throw ProbeMetricError.noMeasurement }
        var out = [
            XCTPerformanceMeasurement(
                identifier: Self.decode, displayName: "Decode speed",
                doubleValue: ProbeResult.median(r.reps.map(\.decodeTokS)), unitSymbol: "tokens/s"),
            XCTPerformanceMeasurement(
                identifier: Self.prefill, displayName: "Prefill speed",
                doubleValue: ProbeResult.median(r.reps.map(\.prefillTokS)), unitSymbol: "tokens/s"),
            XCTPerformanceMeasurement(
                identifier: Self.ttft, displayName: "Time to first token",
                doubleValue: ProbeResult.median(r.reps.map(\.ttftS)) * 1000, unitSymbol: "ms"),
        ]
        if let peak = r.peakIncreaseBytes {
            out.append(
                XCTPerformanceMeasurement(
                    identifier: Self.footprint, displayName: "Peak memory increase (phys_footprint, probe)",
                    doubleValue: Double(peak) / 1000, unitSymbol: "kB"))
        }
        return out
    }
}

final class ProbeMeasureTests: XCTestCase {
    func testMeasureSpec() throws {
        let url = try XCTUnwrap(
            Bundle(for: Self.self).url(forResource: "spec", withExtension: "json"),
            "spec.json is not in the test bundle")
        let spec = try String(contentsOf: url, encoding: .utf8)
        keep(spec, as: "pocketbench-spec")
        Probe.enterDataContainer()
        // The probe builds the seeded model once; the first run of the
        // block would otherwise time the build.
        let first = Probe.run(specJSON: spec)
        XCTAssertNil(Probe.failure(in: first), "the probe failed before measuring")
        let expected = try ProbeResult.decode(first).reps.first?.tokensHash

        let options = XCTMeasureOptions()
        options.iterationCount = 5
        measure(metrics: [ProbeMetric(), XCTClockMetric(), XCTMemoryMetric()], options: options) {
            let json = Probe.run(specJSON: spec)
            if let failure = Probe.failure(in: json) {
                XCTFail("the probe failed: \(failure)")
                return
            }
            keep(json, as: "pocketbench-result")
            do {
                let result = try ProbeResult.decode(json)
                // Greedy decoding of fixed weights and prompt: the same
                // tokens every time, or the speed belongs to a wrong run.
                for rep in result.reps {
                    XCTAssertEqual(rep.tokensHash, expected, "the generated tokens changed between runs")
                }
                ProbeRecord.shared.put(result)
            } catch {
                XCTFail("the probe's result did not decode: \(error)")
            }
        }
    }

    /// Keeps `json` in the result bundle whether the test passes or not.
    private func keep(_ json: String, as name: String) {
        let attachment = XCTAttachment(string: json)
        attachment.name = name
        attachment.lifetime = .keepAlways
        add(attachment)
    }
}
