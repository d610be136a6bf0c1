import LatchServer
import Testing

@Suite("Loopback ports")
struct LoopbackPortTests {
    @Test("Free ports are distinct within a process, bindable, and below the kernel's ephemeral range (where outgoing connections take theirs)")
    func free() throws {
        let ports = try (0..<200).map { _ in try LoopbackPort.free() }
        #expect(Set(ports).count == ports.count)
        if let lowest = LoopbackPort.ephemeralRangeStart(), lowest > 11_000 {
            #expect(ports.allSatisfy { $0 >= 10_000 && $0 < lowest }, "\(ports.filter { $0 >= lowest })")
        }
        #expect(ports.prefix(20).allSatisfy { LoopbackPort.bindable($0) })
    }
}
