package dev.idempotency.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What two or more relays did, as their clients saw it: when each claimed, and when each
 * send of a row started and ended. It checks that every send ended within the lease of
 * its relay's claim, and that no two relays ever sent the same row at the same time.
 */
final class SendLog {

	private final Duration lease;

	private final List<Claim> claims = new CopyOnWriteArrayList<>();

	private final Map<String, List<Send>> sends = new ConcurrentHashMap<>();

	SendLog(Duration lease) {
		this.lease = lease;
	}

	/**
	 * A hook that records the claims of a relay.
	 */
	RelayHook claims(String relay) {
		return new RelayHook() {
			@Override
			public void afterClaim(List<OutboxMessage> claimed) {
				SendLog.this.claims.add(new Claim(relay, System.nanoTime()));
			}
		};
	}

	void started(String relay, String row) {
		if (row.startsWith("warm-up")) {
			return;
		}
		this.sends.computeIfAbsent(row, (key) -> new CopyOnWriteArrayList<>()).add(new Send(relay, System.nanoTime()));
	}

	void ended(String relay, String row) {
		long now = System.nanoTime();
		for (Send send : this.sends.getOrDefault(row, List.of())) {
			if (send.relay.equals(relay) && send.end == 0) {
				send.end = now;
				return;
			}
		}
	}

	/**
	 * Whether a claim happened after the lease of the first claim had run out.
	 */
	boolean claimedAfterTheFirstLease() {
		if (this.claims.isEmpty()) {
			return false;
		}
		long firstLeaseEnd = this.claims.get(0).at + this.lease.toNanos();
		return this.claims.stream().anyMatch((claim) -> claim.at > firstLeaseEnd);
	}

	void assertEverySendEndedWithinItsLeaseAndNoRowWentOutTwiceAtOnce() {
		assertThat(this.sends).isNotEmpty();
		List<String> late = new ArrayList<>();
		List<String> concurrent = new ArrayList<>();
		this.sends.forEach((row, rowSends) -> {
			for (Send send : rowSends) {
				assertThat(send.end).as("end of a send of %s", row).isPositive();
				long claimedAt = this.claims.stream()
					.filter((claim) -> claim.relay.equals(send.relay) && claim.at <= send.start)
					.mapToLong(Claim::at)
					.max()
					.orElseThrow();
				if (send.end > claimedAt + this.lease.toNanos()) {
					late.add(row + " by " + send.relay + ", " + Duration.ofNanos(send.end - claimedAt)
							+ " after the claim");
				}
				for (Send other : rowSends) {
					if (!other.relay.equals(send.relay) && other.start < send.end && send.start < other.end) {
						concurrent.add(row + " by " + send.relay + " and " + other.relay);
					}
				}
			}
		});
		assertThat(late).as("sends that outlived the lease of " + this.lease).isEmpty();
		assertThat(concurrent).as("rows sent by two relays at once").isEmpty();
	}

	private record Claim(String relay, long at) {
	}

	private static final class Send {

		final String relay;

		final long start;

		volatile long end;

		Send(String relay, long start) {
			this.relay = relay;
			this.start = start;
		}

	}

}
