import LatchCore
import Testing

@Suite("Refresh rotation rule (RFC 9700 §4.14.2)")
struct RefreshRotationTests {
    let live = Session(id: "s", userID: "u", clientID: "app", authTime: 0, amr: [], scope: "openid", createdAt: 0, expiresAt: 1000, generation: 3, retryGeneration: 2, rotatedAt: 100)

    func decide(_ session: Session? = nil, presented: Int64, client: String = "app", now: Int64 = 105) -> SessionUpdate<RefreshRotation.Outcome> {
        RefreshRotation.decide(session ?? live, presented: presented, clientID: client, now: now, grace: 10)
    }

    @Test("The live generation rotates: g+1, the old one becomes the retry generation")
    func rotates() {
        let update = decide(presented: 3)
        #expect(update.result == .rotated)
        #expect(update.session?.generation == 4 && update.session?.retryGeneration == 3 && update.session?.rotatedAt == 105)
        #expect(update.session?.revokedAt == nil)
    }

    @Test("The retry generation within the grace window is reissued: g+1, retry kept; after the window it is reuse")
    func grace() {
        let retry = decide(presented: 2, now: 110)
        #expect(retry.result == .reissued && retry.session?.generation == 4 && retry.session?.retryGeneration == 2)
        let late = decide(presented: 2, now: 111)
        #expect(late.result == .reuseDetected && late.session?.revokedAt == 111 && late.session?.generation == 3)
    }

    @Test("Older generations are reuse and revoke the family; the revocation is a write")
    func reuse() {
        let update = decide(presented: 0)
        #expect(update.result == .reuseDetected)
        #expect(update.session?.revokedAt == 105)
    }

    @Test("Nothing changes for unissued generations, other clients, revoked or expired families")
    func refusals() {
        #expect(decide(presented: 4).result == .unknown && decide(presented: 4).session == nil)
        #expect(decide(presented: 3, client: "other").result == .wrongClient && decide(presented: 3, client: "other").session == nil)
        var revoked = live
        revoked.revokedAt = 50
        #expect(decide(revoked, presented: 3).result == .inactive && decide(revoked, presented: 3).session == nil)
        #expect(decide(presented: 3, now: 1000).result == .inactive)
        // Inactive wins over the client check, and the client check over the generation checks.
        #expect(decide(revoked, presented: 9, client: "other").result == .inactive)
        #expect(decide(presented: 9, client: "other").result == .wrongClient)
    }

    @Test("A session never rotated has no retry generation: an older one is reuse")
    func fresh() {
        let fresh = Session(id: "s", userID: "u", clientID: "app", authTime: 0, amr: [], scope: "openid", createdAt: 0, expiresAt: 1000)
        #expect(decide(fresh, presented: 0).result == .rotated)
        var once = fresh
        once.generation = 1
        #expect(decide(once, presented: 0).result == .reuseDetected)
    }
}
