package claims

// SpacePrefix is the pk prefix of the broker's items, for tests that
// match its requests.
const SpacePrefix = spacePrefix
