import { fakeDeploys, realDeploysUnderTest } from './deploys-under-test.js';
import { releaseRulesContract } from './release-rules.contract.js';

releaseRulesContract('in-memory fake', fakeDeploys);
releaseRulesContract('real directories', realDeploysUnderTest);
